//! Syncing translated offsets into target consumer groups (`sync.group.offsets.enabled`,
//! mm2-compat §8.6).
//!
//! With group sync on, a consumer can fail over to the target and simply start: its group
//! already has committed offsets there. The checkpoint task commits, per group, the downstream
//! offsets of its latest checkpoints (`alterConsumerGroupOffsets`). Two rules keep that safe:
//!
//! * an **EMPTY** target group (it exists, nobody is consuming) is never rewound: a partition
//!   whose target offset is already at or past the checkpoint is left alone, because the
//!   consumers there may have moved on since failing over. A null target offset (reset to −1 by
//!   a non-Java client such as sarama) is overwritten;
//! * any **other** state gets every partition: a group that does not exist on the target (DEAD,
//!   `GroupIdNotFoundException`) is created with the checkpointed offsets. Java also sends the
//!   write to groups with active members and relies on the broker to reject it with
//!   `UnknownMemberIdException`, logged as a warning (§13 #8).
//!
//! Checkpoints themselves may go backwards after an upstream rewind (§8.5); synced offsets of an
//! existing EMPTY group do not, but a group that does not exist gets whatever the latest
//! checkpoint says.
//!
//! **Note for the slice runner:** mirrorslice additionally refuses to write to target groups with
//! active members rather than relying on the broker's rejection; use
//! [`TargetGroupState::has_active_members`] to drop those entries from the plan. Java also needs
//! `emit.checkpoints.enabled=true` and at least one checkpoint task for any of this to run
//! (§13 #9), and clears its idle-group snapshot after each sync: take a fresh
//! `describeConsumerGroups` snapshot before every sync.
//!
//! Checked against `apache/kafka` `MirrorCheckpointTask.syncGroupOffset` and
//! `refreshIdleConsumerGroupOffset`, and `MirrorCheckpointTaskTest`.

use std::collections::BTreeMap;

use super::{OffsetAndMetadata, TopicPartition};

/// A target group as the refresh step sees it (`describeConsumerGroups` on the target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetGroupState {
    /// State `EMPTY`, with its committed offsets on the target. `None` is a partition whose
    /// listed `OffsetAndMetadata` is null (offset reset to −1 by a non-Java client).
    Empty(BTreeMap<TopicPartition, Option<i64>>),
    /// A state with members (`STABLE`, `PREPARING_REBALANCE`, `COMPLETING_REBALANCE`,
    /// `ASSIGNING`, `RECONCILING`, ...).
    Active,
    /// The group does not exist on the target (`DEAD`, or `GroupIdNotFoundException`).
    Missing,
    /// The description or the offset listing failed; Java logs it and treats the group as not
    /// idle.
    Unknown,
}

impl TargetGroupState {
    /// Whether the group has members on the target. Java writes anyway and lets the broker
    /// reject it; mirrorslice skips such groups.
    pub fn has_active_members(&self) -> bool {
        matches!(self, TargetGroupState::Active)
    }
}

/// One `alterConsumerGroupOffsets(group, offsets)` call to make on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOffsetSync {
    /// The consumer group on the target (same id as upstream).
    pub group: String,
    /// Renamed topic-partition → (downstream offset, metadata) to commit.
    pub offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
}

/// Java `syncGroupOffset()` (§8.6): the offset writes to make on the target.
///
/// * `converted`: per group, renamed TP → (checkpoint downstream offset, metadata), i.e.
///   [`super::checkpoint_store::CheckpointStore::converted_upstream_offsets`];
/// * `target_states`: the refresh snapshot. A group absent from it is treated as not idle, as
///   in Java (its describe failed or was not attempted).
///
/// Groups come out in name order. A group with nothing to write produces no call. For a group
/// that is not idle and has no checkpoints yet, Java still calls `alterConsumerGroupOffsets`
/// with an empty map; we skip that no-op call.
pub fn plan_group_offset_sync(
    converted: &BTreeMap<String, BTreeMap<TopicPartition, OffsetAndMetadata>>,
    target_states: &BTreeMap<String, TargetGroupState>,
) -> Vec<GroupOffsetSync> {
    let mut plan = Vec::new();
    for (group, conv) in converted {
        let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = match target_states.get(group) {
            Some(TargetGroupState::Empty(target)) => conv
                .iter()
                .filter(|(tp, checkpointed)| match target.get(*tp) {
                    // A partition new to the target group.
                    None => true,
                    Some(None) => {
                        tracing::warn!(
                            group = group.as_str(),
                            topic = tp.0.as_str(),
                            partition = tp.1,
                            "target group offset may have been reset to a negative offset; \
                             syncing the checkpointed offset"
                        );
                        true
                    }
                    // Never rewind an idle target group.
                    Some(Some(current)) => *current < checkpointed.offset,
                })
                .map(|(tp, om)| (tp.clone(), om.clone()))
                .collect(),
            // Not idle (missing, active, unknown): everything; the broker guards active groups.
            _ => conv.clone(),
        };
        if offsets.is_empty() {
            tracing::trace!(group = group.as_str(), "nothing to sync for consumer group");
            continue;
        }
        plan.push(GroupOffsetSync {
            group: group.clone(),
            offsets,
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        (topic.to_string(), partition)
    }

    fn conv(
        entries: &[(&str, &str, i32, i64)],
    ) -> BTreeMap<String, BTreeMap<TopicPartition, OffsetAndMetadata>> {
        let mut out: BTreeMap<String, BTreeMap<TopicPartition, OffsetAndMetadata>> =
            BTreeMap::new();
        for (g, t, p, o) in entries {
            out.entry(g.to_string())
                .or_default()
                .insert(tp(t, *p), OffsetAndMetadata::with_metadata(*o, "metadata"));
        }
        out
    }

    fn empty_group(entries: &[(&str, i32, Option<i64>)]) -> TargetGroupState {
        TargetGroupState::Empty(entries.iter().map(|(t, p, o)| (tp(t, *p), *o)).collect())
    }

    fn offset_of(plan: &[GroupOffsetSync], group: &str, t: &str, p: i32) -> Option<i64> {
        plan.iter()
            .find(|s| s.group == group)
            .and_then(|s| s.offsets.get(&tp(t, p)))
            .map(|om| om.offset)
    }

    // §12.6 #62 (Java testSyncOffset).
    #[test]
    fn sync_offsets_of_idle_groups() {
        let converted = conv(&[
            ("consumer1", "topic1", 0, 101),
            ("consumer2", "topic2", 0, 51),
        ]);
        let mut states = BTreeMap::new();
        states.insert(
            "consumer1".to_string(),
            empty_group(&[("topic1", 0, Some(100))]),
        );
        states.insert(
            "consumer2".to_string(),
            empty_group(&[("topic2", 0, Some(50))]),
        );
        let plan = plan_group_offset_sync(&converted, &states);
        assert_eq!(offset_of(&plan, "consumer1", "topic1", 0), Some(101));
        assert_eq!(offset_of(&plan, "consumer2", "topic2", 0), Some(51));
        assert_eq!(plan[0].offsets[&tp("topic1", 0)].metadata, "metadata");
    }

    // §12.6 #63 (Java testSyncOffsetForTargetGroupWithNullOffsetAndMetadata).
    #[test]
    fn null_target_offset_is_overwritten() {
        let converted = conv(&[("consumer", "topic", 0, 101)]);
        let mut states = BTreeMap::new();
        states.insert("consumer".to_string(), empty_group(&[("topic", 0, None)]));
        let plan = plan_group_offset_sync(&converted, &states);
        assert_eq!(offset_of(&plan, "consumer", "topic", 0), Some(101));
    }

    // §8.6: an EMPTY group is never rewound; equal offsets are skipped too; new partitions and
    // lower offsets are synced.
    #[test]
    fn idle_group_is_never_rewound() {
        let converted = conv(&[
            ("g", "A.t", 0, 100),
            ("g", "A.t", 1, 100),
            ("g", "A.t", 2, 100),
            ("g", "A.t", 3, 100),
        ]);
        let mut states = BTreeMap::new();
        states.insert(
            "g".to_string(),
            empty_group(&[
                ("A.t", 0, Some(150)),
                ("A.t", 1, Some(100)),
                ("A.t", 2, Some(99)),
            ]),
        );
        let plan = plan_group_offset_sync(&converted, &states);
        assert_eq!(plan.len(), 1);
        let synced: Vec<i32> = plan[0].offsets.keys().map(|(_, p)| *p).collect();
        assert_eq!(synced, vec![2, 3]);
    }

    // §8.6: nothing left to sync ⇒ no call at all.
    #[test]
    fn no_call_when_nothing_to_sync() {
        let converted = conv(&[("g", "A.t", 0, 100)]);
        let mut states = BTreeMap::new();
        states.insert("g".to_string(), empty_group(&[("A.t", 0, Some(100))]));
        assert!(plan_group_offset_sync(&converted, &states).is_empty());
    }

    // §8.6, §13 #8: groups that are not EMPTY (missing, active, unknown, or absent from the
    // snapshot) get every partition, even lower ones.
    #[test]
    fn non_idle_groups_get_all_partitions() {
        let converted = conv(&[
            ("missing", "A.t", 0, 5),
            ("active", "A.t", 0, 5),
            ("unknown", "A.t", 0, 5),
            ("absent", "A.t", 0, 5),
            ("absent", "A.t", 1, 6),
        ]);
        let mut states = BTreeMap::new();
        states.insert("missing".to_string(), TargetGroupState::Missing);
        states.insert("active".to_string(), TargetGroupState::Active);
        states.insert("unknown".to_string(), TargetGroupState::Unknown);
        let plan = plan_group_offset_sync(&converted, &states);
        let groups: Vec<&str> = plan.iter().map(|s| s.group.as_str()).collect();
        assert_eq!(groups, ["absent", "active", "missing", "unknown"]);
        assert_eq!(plan[0].offsets.len(), 2);
        assert!(states["active"].has_active_members());
        assert!(!states["missing"].has_active_members());
    }

    // A not-idle group without checkpoints: Java sends an empty alter; we skip it.
    #[test]
    fn empty_checkpoint_map_makes_no_call() {
        let mut converted = BTreeMap::new();
        converted.insert("g".to_string(), BTreeMap::new());
        assert!(plan_group_offset_sync(&converted, &BTreeMap::new()).is_empty());
    }
}
