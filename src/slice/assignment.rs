//! One writer per source partition while the task assignment moves between invocations.
//!
//! Task leases are keyed by task id, but the partitions of a task are recomputed every slice
//! (§6.7 round robin over the sorted partitions): a new topic that sorts first, new partitions
//! or a `tasks.max` edit move partitions from one task id to another. Without more, a slice
//! still running task 0 of the old assignment and a new slice winning task 1 of the new one
//! would copy the same partition at once. Connect avoids it with rebalances that revoke before
//! they assign (KIP-415); a slice has no group, so it keeps an **assignment record** instead:
//! for each task id, the partitions its lease holder may copy.
//!
//! The record is read and written only under the connector lease, and task leases are only
//! acquired under it too, so one invocation at a time moves the assignment. A slice with
//! assignment `A` and record `R` (both task id → partitions):
//!
//! * a task whose partitions did not change (`A[k] == R[k]`) starts as before: its lease key
//!   already excludes any other holder;
//! * every other task id in `R` is *moved*; the partitions of the moved tasks whose lease is
//!   still live are *blocked*;
//! * a changed task starts only if none of its partitions is blocked (and its own id is not one
//!   of the live moved tasks); the others wait, reported as such, for a later slice;
//! * the record becomes: live moved tasks with their old partitions, started tasks with their
//!   new ones.
//!
//! Entries of the record never overlap (induction over the rule above), and every live task
//! lease holder copies only its record entry, so no partition has two writers. In the steady
//! state (`A == R`) a slice reads the record (beside the connector phase) and probes nothing.

use crate::connectors::source::task::TopicPartition;
use crate::lease::{LeaseInfo, LeaseStore};
use crate::state::StateStore;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

/// Where a connector's assignment record is kept in the state store.
pub fn record_key(flow: &str, connector: &str) -> String {
    format!("{flow}/{connector}/assignment")
}

/// Task id → the partitions that task's lease holder may copy, grouped by topic (compact in
/// the state store: a topic name once per task).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssignmentRecord {
    pub tasks: BTreeMap<u32, BTreeMap<String, BTreeSet<i32>>>,
}

impl AssignmentRecord {
    /// The record of a fresh assignment: task `k` gets `task_partitions[k]`.
    pub fn of(task_partitions: &[Vec<TopicPartition>]) -> Self {
        let tasks = task_partitions
            .iter()
            .enumerate()
            .map(|(k, parts)| (k as u32, group(parts)))
            .collect();
        AssignmentRecord { tasks }
    }
}

fn group(parts: &[TopicPartition]) -> BTreeMap<String, BTreeSet<i32>> {
    let mut by_topic: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for (topic, p) in parts {
        by_topic.entry(topic.clone()).or_default().insert(*p);
    }
    by_topic
}

fn overlaps(a: &BTreeMap<String, BTreeSet<i32>>, b: &BTreeMap<String, BTreeSet<i32>>) -> bool {
    a.iter()
        .any(|(topic, ps)| b.get(topic).is_some_and(|qs| !ps.is_disjoint(qs)))
}

/// Task ids of `record` whose partitions differ in `wanted`: their lease holders may be copying
/// partitions that now belong elsewhere, so their liveness decides what may start.
pub fn moved_tasks(record: &AssignmentRecord, wanted: &AssignmentRecord) -> Vec<u32> {
    record
        .tasks
        .iter()
        .filter(|(k, parts)| wanted.tasks.get(k) != Some(parts))
        .map(|(k, _)| *k)
        .collect()
}

/// What a slice may start, given which moved tasks are still live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// Task ids of the new assignment that may start now.
    pub startable: Vec<u32>,
    /// Task ids that must wait, each with the live moved tasks it waits for.
    pub waiting: BTreeMap<u32, Vec<u32>>,
    /// The record to store before any task lease is acquired.
    pub record: AssignmentRecord,
}

/// The rule of the module doc. `live_moved` are the ids of [`moved_tasks`] whose lease is live.
pub fn admit(
    record: &AssignmentRecord,
    wanted: &AssignmentRecord,
    live_moved: &BTreeSet<u32>,
) -> Admission {
    let mut next = AssignmentRecord::default();
    for k in live_moved {
        if let Some(parts) = record.tasks.get(k) {
            next.tasks.insert(*k, parts.clone());
        }
    }
    let (mut startable, mut waiting) = (Vec::new(), BTreeMap::new());
    for (k, parts) in &wanted.tasks {
        let unchanged = record.tasks.get(k) == Some(parts);
        let blockers: Vec<u32> = live_moved
            .iter()
            .filter(|j| *j == k || record.tasks.get(j).is_some_and(|old| overlaps(old, parts)))
            .copied()
            .collect();
        if unchanged || blockers.is_empty() {
            startable.push(*k);
            next.tasks.insert(*k, parts.clone());
        } else {
            waiting.insert(*k, blockers);
        }
    }
    Admission {
        startable,
        waiting,
        record: next,
    }
}

/// The assignment record, read fresh from the store (never from the slice's prefetched copy:
/// it must be read under the connector lease). Started as soon as the connector lease is held,
/// so the read overlaps the connector phase. An unreadable record is treated as none, with a
/// warning: the slice then knows no tasks of an earlier assignment, as on a flow's first slice.
pub fn read_record(
    state: Arc<dyn StateStore>,
    key: String,
) -> tokio::task::JoinHandle<Result<AssignmentRecord, String>> {
    tokio::task::spawn_blocking(move || match state.get(&key) {
        Ok(None) => Ok(AssignmentRecord::default()),
        Ok(Some(value)) => Ok(serde_json::from_value(value.clone()).unwrap_or_else(|e| {
            tracing::warn!(key, error = %e, %value, "unreadable assignment record replaced");
            AssignmentRecord::default()
        })),
        Err(e) => Err(format!("reading the task assignment record: {e}")),
    })
}

/// Everything [`admit_under_connector_lease`] needs.
pub struct Gate<'a> {
    pub leases: &'a Arc<dyn LeaseStore>,
    pub state: &'a Arc<dyn StateStore>,
    pub record_key: String,
    /// Lease key of a task id.
    pub task_key: &'a (dyn Fn(u32) -> String + Sync),
    /// The connector lease's fencing token: the record is written fenced by it.
    pub connector_token: u64,
    /// Lease-table calls are given up at this instant.
    pub until: Instant,
}

/// What may start of `wanted`, by the rule of the module doc, with the live holders of the
/// moved tasks (for the report); the new record is stored before this returns. Must run under
/// the connector lease, before any task lease is acquired.
pub async fn admit_under_connector_lease(
    gate: &Gate<'_>,
    record: AssignmentRecord,
    wanted: &AssignmentRecord,
) -> Result<(Admission, BTreeMap<u32, LeaseInfo>), String> {
    let mut probes = tokio::task::JoinSet::new();
    for id in moved_tasks(&record, wanted) {
        let (leases, key) = (gate.leases.clone(), (gate.task_key)(id));
        probes.spawn(async move { (id, leases.live_holder(&key).await) });
    }
    let mut holders = BTreeMap::new();
    let probed = tokio::time::timeout_at(gate.until.into(), async {
        while let Some(joined) = probes.join_next().await {
            let (id, holder) = joined.expect("lease probe panicked");
            let holder = holder.map_err(|e| format!("probing task {id}'s lease: {e}"))?;
            holders.extend(holder.map(|h| (id, h)));
        }
        Ok::<_, String>(())
    });
    probed
        .await
        .map_err(|_| "probing the leases of moved tasks: no answer in time".to_string())??;
    let live: BTreeSet<u32> = holders.keys().copied().collect();
    let admission = admit(&record, wanted, &live);
    if admission.record != record {
        store_record(gate, &admission.record).await?;
    }
    Ok((admission, holders))
}

async fn store_record(gate: &Gate<'_>, record: &AssignmentRecord) -> Result<(), String> {
    let (state, key) = (gate.state.clone(), gate.record_key.clone());
    let (token, value) = (
        gate.connector_token,
        serde_json::to_value(record).expect("record"),
    );
    tokio::task::spawn_blocking(move || state.put_fenced(&key, &value, token))
        .await
        .expect("record write panicked")
        .map_err(|e| format!("storing the task assignment record: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, p: i32) -> TopicPartition {
        (topic.to_string(), p)
    }

    fn rec(tasks: &[&[(&str, i32)]]) -> AssignmentRecord {
        let parts: Vec<Vec<TopicPartition>> = tasks
            .iter()
            .map(|t| t.iter().map(|(topic, p)| tp(topic, *p)).collect())
            .collect();
        AssignmentRecord::of(&parts)
    }

    #[test]
    fn the_steady_state_moves_nothing_and_starts_everything() {
        let a = rec(&[&[("t", 0), ("t", 2)], &[("t", 1)]]);
        assert!(moved_tasks(&a, &a).is_empty());
        let admission = admit(&a, &a, &BTreeSet::new());
        assert_eq!(admission.startable, vec![0, 1]);
        assert!(admission.waiting.is_empty());
        assert_eq!(admission.record, a);
    }

    #[test]
    fn a_first_slice_without_a_record_starts_everything_and_records_it() {
        let wanted = rec(&[&[("t", 0)], &[("t", 1)]]);
        let none = AssignmentRecord::default();
        assert!(moved_tasks(&none, &wanted).is_empty());
        let admission = admit(&none, &wanted, &BTreeSet::new());
        assert_eq!(admission.startable, vec![0, 1]);
        assert_eq!(admission.record, wanted);
    }

    #[test]
    fn a_new_topic_sorting_first_waits_while_the_old_tasks_run() {
        // tasks.max=2 over b-0, b-1; then topic a-0 arrives and shifts the round robin.
        let old = rec(&[&[("b", 0)], &[("b", 1)]]);
        let new = rec(&[&[("a", 0), ("b", 1)], &[("b", 0)]]);
        assert_eq!(moved_tasks(&old, &new), vec![0, 1]);
        // Old task 0 (b-0) still runs elsewhere: new task 1 would copy b-0, and new task 0
        // has the live task's id.
        let admission = admit(&old, &new, &BTreeSet::from([0]));
        assert!(admission.startable.is_empty());
        assert_eq!(admission.waiting[&0], vec![0]);
        assert_eq!(admission.waiting[&1], vec![0]);
        assert_eq!(admission.record, rec(&[&[("b", 0)]]));
        // Nothing live any more: everything starts and the record is the new assignment.
        let later = admit(&admission.record, &new, &BTreeSet::new());
        assert_eq!(later.startable, vec![0, 1]);
        assert_eq!(later.record, new);
    }

    #[test]
    fn a_changed_task_disjoint_from_every_live_task_starts() {
        // tasks.max 3 -> 2 over t-0..t-3: old 0={0,3} 1={1} 2={2}; new 0={0,2} 1={1,3}.
        let old = rec(&[&[("t", 0), ("t", 3)], &[("t", 1)], &[("t", 2)]]);
        let new = rec(&[&[("t", 0), ("t", 2)], &[("t", 1), ("t", 3)]]);
        assert_eq!(moved_tasks(&old, &new), vec![0, 1, 2]);
        // Only old task 2 (t-2) is live: new task 0 needs t-2 and waits; new task 1 (t-1, t-3)
        // shares nothing with it and starts.
        let admission = admit(&old, &new, &BTreeSet::from([2]));
        assert_eq!(admission.startable, vec![1]);
        assert_eq!(admission.waiting, BTreeMap::from([(0, vec![2])]));
        let mut expected = rec(&[&[], &[("t", 1), ("t", 3)], &[("t", 2)]]);
        expected.tasks.remove(&0);
        assert_eq!(admission.record, expected);
    }

    #[test]
    fn an_unchanged_task_starts_even_while_others_move() {
        // New partition t-2 goes to task 0; task 1 keeps t-1.
        let old = rec(&[&[("t", 0)], &[("t", 1)]]);
        let new = rec(&[&[("t", 0), ("t", 2)], &[("t", 1)]]);
        assert_eq!(moved_tasks(&old, &new), vec![0]);
        let admission = admit(&old, &new, &BTreeSet::from([0]));
        assert_eq!(admission.startable, vec![1]);
        assert_eq!(admission.waiting, BTreeMap::from([(0, vec![0])]));
    }

    #[test]
    fn the_record_round_trips_through_json() {
        let a = rec(&[&[("t", 0), ("u", 3)], &[("t", 1)]]);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"tasks": {"0": {"t": [0], "u": [3]}, "1": {"t": [1]}}})
        );
        assert_eq!(serde_json::from_value::<AssignmentRecord>(json).unwrap(), a);
    }
}
