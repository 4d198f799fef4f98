//! Which groups to checkpoint, and which checkpoints to emit (mm2-compat §8.1, §8.5).
//!
//! **Group discovery** ([`filter_groups`], [`find_relevant_groups`]): the connector checkpoints
//! the source groups the `GroupFilter` accepts *and* that have at least one committed offset on
//! a topic the `TopicFilter` accepts. Only the topic filter applies here: no internal-topic or
//! cycle check (§8.1). The groups are then cut into contiguous chunks per task with
//! [`crate::config::connector::assign_groups_contiguous`].
//!
//! **Per poll** ([`CheckpointTask::checkpoints_for_group`]): each committed upstream offset is
//! translated by the [`OffsetSyncStore`], renamed to the target-side topic, and passed through
//! the **monotonic filter** against the last stored checkpoint, because the sync store may
//! translate the same offset lower after it expired syncs or restarted (§8.3). A checkpoint is
//! emitted only if it is the first for the group or partition, if the upstream group rewound
//! (then downstream may go back too, by design, §13 #19), or if the downstream offset advanced.
//! Everything else is a duplicate or an unwanted rewind.
//!
//! Emitted checkpoints go into the [`CheckpointStore`] before they are written, as Java does, so
//! the next poll compares against them.
//!
//! Checked against `apache/kafka` `MirrorCheckpointTask.java`, `MirrorCheckpointConnector.java`
//! and `MirrorCheckpointTaskTest.java`.

use std::collections::{BTreeMap, BTreeSet};

use crate::filter::{GroupFilter, TopicFilter};
use crate::policy::ReplicationPolicy;
use crate::wire::Checkpoint;

use super::checkpoint_store::CheckpointStore;
use super::offset_sync_store::OffsetSyncStore;
use super::{OffsetAndMetadata, TopicPartition};

/// The target-side name of a source topic for checkpoints (Java `renameTopicPartition`, §8.5):
///
/// * a topic that came *from* the target (`topicSource(topic) == target`) goes back to its
///   original name, e.g. `target2.topic3` → `topic3`;
/// * any other topic is formatted as a remote topic of the source, e.g. `topic3` →
///   `source1.topic3`, `source6.topic7` → `source1.source6.topic7`.
///
/// The partition number never changes.
pub fn rename_topic(
    policy: &ReplicationPolicy,
    source_alias: &str,
    target_alias: &str,
    topic: &str,
) -> String {
    if policy.topic_source(topic).as_deref() == Some(target_alias) {
        policy.original_topic(topic)
    } else {
        policy.format_remote_topic(source_alias, topic)
    }
}

/// Java `MirrorCheckpointConnector.findConsumerGroups`, step 2: keep the listed groups the
/// group filter accepts, in listing order, without duplicates. Their committed offsets are
/// then fetched for [`find_relevant_groups`].
pub fn filter_groups(listed: &[String], group_filter: &GroupFilter) -> Vec<String> {
    let mut seen = BTreeSet::new();
    listed
        .iter()
        .filter(|g| group_filter.should_replicate_group(g) && seen.insert(g.as_str()))
        .cloned()
        .collect()
}

/// Java `findConsumerGroups` (§8.1, §12.7 #72): from `(group, committed topic-partitions)`,
/// keep the groups the group filter accepts that have at least one committed offset on a topic
/// the topic filter accepts. Input order is kept and duplicates dropped (Java returns a
/// `HashSet`, so its order carries no meaning).
pub fn find_relevant_groups(
    groups: &[(String, Vec<TopicPartition>)],
    group_filter: &GroupFilter,
    topic_filter: &TopicFilter,
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut relevant = Vec::new();
    for (group, partitions) in groups {
        if !group_filter.should_replicate_group(group) {
            continue;
        }
        let consumes_replicated_topic = partitions
            .iter()
            .any(|(topic, _)| topic_filter.should_replicate_topic(topic));
        if !consumes_replicated_topic {
            tracing::debug!(
                group = group.as_str(),
                "ignoring group without offsets for topics accepted by the topic filter"
            );
            continue;
        }
        if seen.insert(group.as_str()) {
            relevant.push(group.clone());
        }
    }
    relevant
}

/// A checkpoint to write, with its record timestamp.
///
/// The record goes to `<source>.checkpoints.internal` on the target, partition 0, with
/// `checkpoint.encode_key()` / `encode_value()` and this timestamp (§4.3, §8.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The checkpoint (renamed topic).
    pub checkpoint: Checkpoint,
    /// Wall-clock time taken just before the group's offsets were listed.
    pub timestamp_ms: i64,
}

/// Two upstream partitions of one group renamed to the same target partition.
///
/// Java collects a group's checkpoints into a map keyed by renamed partition with
/// `Collectors.toMap`, which throws on such a collision; the exception fails that whole poll.
/// It can only happen with unusual topic names (e.g. `B.x` and `B.A.x` upstream of `A->B`
/// both rename to `x`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "consumer group {group}: upstream partitions {first_topic}-{partition} and \
     {second_topic}-{partition} both rename to {renamed_topic}-{partition}"
)]
pub struct CheckpointError {
    /// The consumer group.
    pub group: String,
    /// The first upstream topic.
    pub first_topic: String,
    /// The second upstream topic.
    pub second_topic: String,
    /// The target-side topic both rename to.
    pub renamed_topic: String,
    /// The partition number.
    pub partition: i32,
}

/// Committed offsets of one upstream group, as listed on the source: `None` is Java's null
/// `OffsetAndMetadata`.
pub type CommittedOffsets = BTreeMap<TopicPartition, Option<OffsetAndMetadata>>;

/// The fixed context of a checkpoint task: the flow and how it renames and filters topics.
#[derive(Debug, Clone)]
pub struct CheckpointTask {
    /// The source cluster alias (`source.cluster.alias`).
    pub source_alias: String,
    /// The target cluster alias (`target.cluster.alias`).
    pub target_alias: String,
    /// The flow's replication policy.
    pub policy: ReplicationPolicy,
    /// The flow's topic filter; only topics it accepts are checkpointed.
    pub topic_filter: TopicFilter,
}

impl CheckpointTask {
    /// The task context for `source_alias -> target_alias`.
    pub fn new(
        source_alias: impl Into<String>,
        target_alias: impl Into<String>,
        policy: ReplicationPolicy,
        topic_filter: TopicFilter,
    ) -> Self {
        CheckpointTask {
            source_alias: source_alias.into(),
            target_alias: target_alias.into(),
            policy,
            topic_filter,
        }
    }

    /// [`rename_topic`] for this flow.
    pub fn rename_topic(&self, topic: &str) -> String {
        rename_topic(&self.policy, &self.source_alias, &self.target_alias, topic)
    }

    /// Java `checkpoint(group, tp, offsetAndMetadata)`: the translated, renamed checkpoint for
    /// one committed offset, before the `≥ 0` and monotonic filters. `None` when the committed
    /// offset is null (§12.6 #65) or the sync store has nothing for the partition (#64).
    pub fn checkpoint(
        &self,
        group: &str,
        topic_partition: (&str, i32),
        committed: Option<&OffsetAndMetadata>,
        syncs: &OffsetSyncStore,
    ) -> Option<Checkpoint> {
        let committed = committed?;
        let (topic, partition) = topic_partition;
        let downstream = syncs.translate_downstream(group, topic_partition, committed.offset)?;
        Some(Checkpoint {
            consumer_group_id: group.to_string(),
            topic: self.rename_topic(topic),
            partition,
            upstream_offset: committed.offset,
            downstream_offset: downstream,
            metadata: committed.metadata.clone(),
        })
    }

    /// Java `checkpointsForGroup` (§8.5 step 2): the checkpoints to emit for one group, in
    /// upstream topic-partition order. Does not update the store; see
    /// [`CheckpointTask::records_for_group`].
    pub fn checkpoints_for_group(
        &self,
        group: &str,
        committed: &CommittedOffsets,
        syncs: &OffsetSyncStore,
        store: &CheckpointStore,
    ) -> Result<Vec<Checkpoint>, CheckpointError> {
        let mut by_renamed: BTreeMap<TopicPartition, &str> = BTreeMap::new();
        let mut out = Vec::new();
        for ((topic, partition), om) in committed {
            if !self.topic_filter.should_replicate_topic(topic) {
                continue;
            }
            let Some(cp) = self.checkpoint(group, (topic, *partition), om.as_ref(), syncs) else {
                continue;
            };
            // −1: the group is older than any usable sync.
            if cp.downstream_offset < 0 {
                continue;
            }
            if !is_more_recent(&cp, store) {
                continue;
            }
            let renamed = (cp.topic.clone(), cp.partition);
            if let Some(first) = by_renamed.insert(renamed, topic) {
                return Err(CheckpointError {
                    group: group.to_string(),
                    first_topic: first.to_string(),
                    second_topic: topic.clone(),
                    renamed_topic: cp.topic,
                    partition: cp.partition,
                });
            }
            out.push(cp);
        }
        Ok(out)
    }

    /// Java `sourceRecordsForGroup`: computes a group's checkpoints, records them in the store,
    /// and returns them with the timestamp taken before the offsets were listed.
    pub fn records_for_group(
        &self,
        group: &str,
        committed: &CommittedOffsets,
        syncs: &OffsetSyncStore,
        store: &mut CheckpointStore,
        timestamp_ms: i64,
    ) -> Result<Vec<CheckpointRecord>, CheckpointError> {
        let checkpoints = self.checkpoints_for_group(group, committed, syncs, store)?;
        store.update_group(group, &checkpoints);
        Ok(checkpoints
            .into_iter()
            .map(|checkpoint| CheckpointRecord {
                checkpoint,
                timestamp_ms,
            })
            .collect())
    }

    /// Java `poll()` after its sleep: `None` while the checkpoint store is not initialized
    /// (§12.6 #68); otherwise the records of every assigned group, in `groups` order.
    ///
    /// `committed` holds each group's listed offsets and the timestamp taken just before listing
    /// them; a group missing from it (its listing failed) is skipped, as Java logs and skips it.
    /// A group whose partitions collide after renaming ([`CheckpointError`]) is skipped with a
    /// warning and its store entry left untouched. Java instead fails the whole poll, having
    /// already stored (but not emitted) the earlier groups' checkpoints, which then never get
    /// written until they advance; we do not reproduce that.
    pub fn poll(
        &self,
        groups: &[String],
        committed: &BTreeMap<String, (CommittedOffsets, i64)>,
        syncs: &OffsetSyncStore,
        store: &mut CheckpointStore,
    ) -> Option<Vec<CheckpointRecord>> {
        if !store.is_initialized() {
            return None;
        }
        let mut records = Vec::new();
        for group in groups {
            let Some((offsets, timestamp_ms)) = committed.get(group) else {
                continue;
            };
            match self.records_for_group(group, offsets, syncs, store, *timestamp_ms) {
                Ok(r) => records.extend(r),
                Err(e) => tracing::warn!(error = %e, "Failure computing checkpoints"),
            }
        }
        Some(records)
    }
}

/// Java `checkpointIsMoreRecent`: the monotonic filter (§8.5 step 2.5).
fn is_more_recent(cp: &Checkpoint, store: &CheckpointStore) -> bool {
    let Some(last_for_group) = store.get(&cp.consumer_group_id) else {
        return true; // first for this group
    };
    let Some(last) = last_for_group.get(&(cp.topic.clone(), cp.partition)) else {
        return true; // first for this partition
    };
    // The upstream group rewound: checkpoints may go back too.
    if cp.upstream_offset < last.upstream_offset {
        return true;
    }
    // Downstream advanced. Otherwise a repeat, or a rewind without an upstream rewind.
    cp.downstream_offset > last.downstream_offset
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_topics() -> TopicFilter {
        TopicFilter::new(&[".*".to_string()], &[]).unwrap()
    }

    fn task() -> CheckpointTask {
        CheckpointTask::new(
            "source1",
            "target2",
            ReplicationPolicy::default_policy(),
            all_topics(),
        )
    }

    fn started_store(must_read_to_end: bool) -> OffsetSyncStore {
        let mut s = OffsetSyncStore::new(must_read_to_end);
        s.finish_initial_read();
        s
    }

    fn sync(store: &mut OffsetSyncStore, topic: &str, partition: i32, up: i64, down: i64) {
        store.handle_record(crate::wire::OffsetSync {
            topic: topic.into(),
            partition,
            upstream_offset: up,
            downstream_offset: down,
        });
    }

    fn offsets(entries: &[(&str, i32, i64)]) -> CommittedOffsets {
        entries
            .iter()
            .map(|(t, p, o)| ((t.to_string(), *p), Some(OffsetAndMetadata::new(*o))))
            .collect()
    }

    fn checkpoint(group: &str, topic: &str, partition: i32, up: i64, down: i64) -> Checkpoint {
        Checkpoint {
            consumer_group_id: group.into(),
            topic: topic.into(),
            partition,
            upstream_offset: up,
            downstream_offset: down,
            metadata: String::new(),
        }
    }

    // §12.6 #60 (Java testDownstreamTopicRenaming).
    #[test]
    fn downstream_topic_renaming() {
        let p = ReplicationPolicy::default_policy();
        assert_eq!(
            rename_topic(&p, "source1", "target2", "topic3"),
            "source1.topic3"
        );
        assert_eq!(
            rename_topic(&p, "source1", "target2", "target2.topic3"),
            "topic3"
        );
        assert_eq!(
            rename_topic(&p, "source1", "target2", "source6.topic7"),
            "source1.source6.topic7"
        );
    }

    // §12.6 #61 (Java testCheckpoint): translation, renaming, exact hits, timestamp.
    #[test]
    fn checkpoint_translation_and_renaming() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "topic1", 2, 3, 4);
        sync(&mut syncs, "target2.topic5", 6, 7, 8);

        let cp1 = t
            .checkpoint(
                "group9",
                ("topic1", 2),
                Some(&OffsetAndMetadata::new(10)),
                &syncs,
            )
            .unwrap();
        assert_eq!((cp1.topic.as_str(), cp1.partition), ("source1.topic1", 2));
        assert_eq!(cp1.consumer_group_id, "group9");
        assert_eq!(cp1.upstream_offset, 10);
        assert_eq!(cp1.downstream_offset, 5);

        let cp2 = t
            .checkpoint(
                "group11",
                ("target2.topic5", 6),
                Some(&OffsetAndMetadata::new(12)),
                &syncs,
            )
            .unwrap();
        assert_eq!((cp2.topic.as_str(), cp2.partition), ("topic5", 6));
        assert_eq!(cp2.consumer_group_id, "group11");
        assert_eq!(cp2.upstream_offset, 12);
        assert_eq!(cp2.downstream_offset, 9);

        let cp3 = t
            .checkpoint(
                "group13",
                ("target2.topic5", 6),
                Some(&OffsetAndMetadata::new(7)),
                &syncs,
            )
            .unwrap();
        assert_eq!((cp3.topic.as_str(), cp3.partition), ("topic5", 6));
        assert_eq!(cp3.upstream_offset, 7);
        assert_eq!(cp3.downstream_offset, 8);

        // The record timestamp is the one given for the poll.
        let mut store = CheckpointStore::with_checkpoints([]);
        let recs = t
            .records_for_group(
                "group9",
                &offsets(&[("topic1", 2, 10)]),
                &syncs,
                &mut store,
                123,
            )
            .unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].timestamp_ms, 123);
        assert_eq!(recs[0].checkpoint, cp1);
    }

    // §8.5: metadata travels with the checkpoint.
    #[test]
    fn metadata_is_carried() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "t", 0, 0, 0);
        let cp = t
            .checkpoint(
                "g",
                ("t", 0),
                Some(&OffsetAndMetadata::with_metadata(0, "meta")),
                &syncs,
            )
            .unwrap();
        assert_eq!(cp.metadata, "meta");
    }

    // §12.6 #64 (Java testNoCheckpointForTopicWithoutOffsetSyncs).
    #[test]
    fn no_checkpoint_without_offset_syncs() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "topic1", 0, 3, 4);
        let om = OffsetAndMetadata::new(10);
        assert!(t
            .checkpoint("group9", ("topic1", 1), Some(&om), &syncs)
            .is_none());
        assert!(t
            .checkpoint("group9", ("topic1", 0), Some(&om), &syncs)
            .is_some());
    }

    // §12.6 #65 (Java testNoCheckpointForTopicWithNullOffsetAndMetadata).
    #[test]
    fn no_checkpoint_for_null_offset() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "topic1", 0, 1, 3);
        assert!(t.checkpoint("g1", ("topic1", 0), None, &syncs).is_none());
        let mut committed = CommittedOffsets::new();
        committed.insert(("topic1".into(), 0), None);
        let store = CheckpointStore::with_checkpoints([]);
        assert!(t
            .checkpoints_for_group("g1", &committed, &syncs, &store)
            .unwrap()
            .is_empty());
    }

    // §8.5 step 2.1: topics the filter rejects get no checkpoint.
    #[test]
    fn topic_filter_applies() {
        let t = CheckpointTask::new(
            "source1",
            "target2",
            ReplicationPolicy::default_policy(),
            TopicFilter::new(&["keep".to_string()], &[]).unwrap(),
        );
        let mut syncs = started_store(true);
        sync(&mut syncs, "keep", 0, 0, 0);
        sync(&mut syncs, "drop", 0, 0, 0);
        let store = CheckpointStore::with_checkpoints([]);
        let cps = t
            .checkpoints_for_group(
                "g",
                &offsets(&[("keep", 0, 0), ("drop", 0, 0)]),
                &syncs,
                &store,
            )
            .unwrap();
        assert_eq!(cps, vec![checkpoint("g", "source1.keep", 0, 0, 0)]);
    }

    // §8.5 step 2.4: a group behind the oldest usable sync (−1) gets no checkpoint.
    #[test]
    fn negative_translation_is_skipped() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "t", 0, 100, 100);
        let store = CheckpointStore::with_checkpoints([]);
        assert_eq!(
            t.checkpoint("g", ("t", 0), Some(&OffsetAndMetadata::new(5)), &syncs)
                .map(|c| c.downstream_offset),
            Some(-1)
        );
        assert!(t
            .checkpoints_for_group("g", &offsets(&[("t", 0, 5)]), &syncs, &store)
            .unwrap()
            .is_empty());
    }

    // §12.6 #66 (Java testCheckpointRecordsMonotonicIfStoreRewinds).
    #[test]
    fn checkpoints_monotonic_if_store_rewinds() {
        let t = task();
        let mut syncs = started_store(true);
        let mut store = CheckpointStore::with_checkpoints([]);
        sync(&mut syncs, "topic1", 0, 11, 4);
        sync(&mut syncs, "topic1", 0, 12, 5);
        assert_eq!(syncs.translate_downstream("g1", ("topic1", 0), 13), Some(6));
        let first = t
            .checkpoints_for_group("g1", &offsets(&[("topic1", 0, 13)]), &syncs, &store)
            .unwrap();
        assert_eq!(first, vec![checkpoint("g1", "source1.topic1", 0, 13, 6)]);
        // The task normally does this.
        store.update_group("g1", &first);

        // Syncs 13→6 … 17→10 make the store drop sync 12→5.
        for (up, down) in (13..=17).zip(6..=10) {
            sync(&mut syncs, "topic1", 0, up, down);
        }
        let now = syncs.translate_downstream("g1", ("topic1", 0), 13);
        assert_eq!(
            now,
            Some(5),
            "spec §12.6 #66: the store now translates 13 → 5"
        );
        // Lower than the stored 6 without an upstream rewind: filtered.
        assert!(t
            .checkpoints_for_group("g1", &offsets(&[("topic1", 0, 13)]), &syncs, &store)
            .unwrap()
            .is_empty());
        // The upstream group rewound to 12: emitted, even though downstream goes back.
        let rewound = t
            .checkpoints_for_group("g1", &offsets(&[("topic1", 0, 12)]), &syncs, &store)
            .unwrap();
        assert_eq!(rewound.len(), 1);
        assert_eq!(rewound[0].upstream_offset, 12);
        assert!(rewound[0].downstream_offset < 6);
    }

    // §8.5 monotonic filter, each branch on its own.
    #[test]
    fn monotonic_filter_branches() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "t", 0, 100, 1000);
        let committed = offsets(&[("t", 0, 150)]); // → 1001
        let run = |store: &CheckpointStore| {
            t.checkpoints_for_group("g", &committed, &syncs, store)
                .unwrap()
                .len()
        };
        // No entry for the group.
        assert_eq!(run(&CheckpointStore::with_checkpoints([])), 1);
        // Group known, partition not.
        assert_eq!(
            run(&CheckpointStore::with_checkpoints([checkpoint(
                "g",
                "source1.t",
                1,
                0,
                0
            )])),
            1
        );
        // Same checkpoint again: a repeat.
        assert_eq!(
            run(&CheckpointStore::with_checkpoints([checkpoint(
                "g",
                "source1.t",
                0,
                150,
                1001
            )])),
            0
        );
        // Downstream advanced.
        assert_eq!(
            run(&CheckpointStore::with_checkpoints([checkpoint(
                "g",
                "source1.t",
                0,
                150,
                1000
            )])),
            1
        );
        // Downstream would go back while upstream did not.
        assert_eq!(
            run(&CheckpointStore::with_checkpoints([checkpoint(
                "g",
                "source1.t",
                0,
                150,
                1002
            )])),
            0
        );
        // Upstream rewound.
        assert_eq!(
            run(&CheckpointStore::with_checkpoints([checkpoint(
                "g",
                "source1.t",
                0,
                151,
                5000
            )])),
            1
        );
    }

    // §12.6 #67 (Java testCheckpointsTaskRestartUsesExistingCheckpoints).
    #[test]
    fn restart_uses_existing_checkpoints() {
        let t = task();
        // First life: syncs 100/200/300 read during the initial read, must-read-to-end off.
        let mut syncs = OffsetSyncStore::new(false);
        for i in [100, 200, 300] {
            sync(&mut syncs, "t1", 0, i, i);
        }
        syncs.finish_initial_read();
        let empty = CheckpointStore::with_checkpoints([]);
        let first = t
            .checkpoints_for_group("group1", &offsets(&[("t1", 0, 250)]), &syncs, &empty)
            .unwrap();
        assert_eq!(first, vec![checkpoint("group1", "source1.t1", 0, 250, 201)]);

        // Second life: syncs 175/275/375/475, and the stored checkpoint 250 → 201.
        let mut syncs2 = OffsetSyncStore::new(false);
        for i in [175, 275, 375, 475] {
            sync(&mut syncs2, "t1", 0, i, i);
        }
        syncs2.finish_initial_read();
        let store = CheckpointStore::with_checkpoints(first);
        assert_eq!(syncs2.translate_downstream("x", ("t1", 0), 250), Some(176));
        assert_eq!(syncs2.translate_downstream("x", ("t1", 0), 370), Some(176));
        for up in [250, 370] {
            assert!(t
                .checkpoints_for_group("group1", &offsets(&[("t1", 0, up)]), &syncs2, &store)
                .unwrap()
                .is_empty());
        }
        let later = t
            .checkpoints_for_group("group1", &offsets(&[("t1", 0, 400)]), &syncs2, &store)
            .unwrap();
        assert_eq!(later, vec![checkpoint("group1", "source1.t1", 0, 400, 376)]);
    }

    // §12.6 #68 (Java testCheckpointStoreInitialized): nothing until the store is initialized.
    #[test]
    fn poll_waits_for_checkpoint_store() {
        let t = task();
        let mut syncs = started_store(true);
        sync(&mut syncs, "t", 0, 0, 0);
        let groups = vec!["group".to_string()];
        let mut committed = BTreeMap::new();
        committed.insert("group".to_string(), (offsets(&[("t", 0, 0)]), 77));

        let mut store = CheckpointStore::new(["group"]);
        assert_eq!(t.poll(&groups, &committed, &syncs, &mut store), None);

        assert!(store.load(Vec::new()));
        let polled = t.poll(&groups, &committed, &syncs, &mut store).unwrap();
        assert_eq!(polled.len(), 1);
        assert_eq!(polled[0].timestamp_ms, 77);
        // Stored, so the next poll filters the repeat.
        assert_eq!(
            store
                .get_partition("group", "source1.t", 0)
                .map(|c| c.downstream_offset),
            Some(0)
        );
        assert_eq!(
            t.poll(&groups, &committed, &syncs, &mut store),
            Some(vec![])
        );
    }

    // Java's toMap collision: two upstream partitions renaming to one target partition.
    #[test]
    fn colliding_renames_are_an_error() {
        let t = CheckpointTask::new("A", "B", ReplicationPolicy::default_policy(), all_topics());
        assert_eq!(t.rename_topic("B.x"), "x");
        assert_eq!(t.rename_topic("B.A.x"), "x");
        let mut syncs = started_store(true);
        sync(&mut syncs, "B.x", 0, 0, 0);
        sync(&mut syncs, "B.A.x", 0, 0, 0);
        let mut store = CheckpointStore::new(["g", "h"]);
        store.load(Vec::new());
        let err = t
            .checkpoints_for_group(
                "g",
                &offsets(&[("B.x", 0, 0), ("B.A.x", 0, 0)]),
                &syncs,
                &store,
            )
            .unwrap_err();
        assert_eq!(err.renamed_topic, "x");
        // poll skips that group only.
        let mut committed = BTreeMap::new();
        committed.insert(
            "g".to_string(),
            (offsets(&[("B.x", 0, 0), ("B.A.x", 0, 0)]), 1),
        );
        committed.insert("h".to_string(), (offsets(&[("B.x", 0, 0)]), 1));
        let polled = t
            .poll(&["g".into(), "h".into()], &committed, &syncs, &mut store)
            .unwrap();
        assert_eq!(polled.len(), 1);
        assert_eq!(polled[0].checkpoint.consumer_group_id, "h");
        assert_eq!(store.get("g"), None);
    }

    // §12.7 #72 (Java findConsumerGroups test).
    #[test]
    fn find_consumer_groups() {
        let topic_filter = TopicFilter::new(&["t2".to_string()], &[]).unwrap();
        let group_filter = GroupFilter::new(&[".*".to_string()], &["g4".to_string()]).unwrap();
        let listed: Vec<String> = ["g1", "g2", "g3", "g4"].map(String::from).to_vec();
        let filtered = filter_groups(&listed, &group_filter);
        assert_eq!(filtered, ["g1", "g2", "g3"]);

        let tps = |ts: &[&str]| -> Vec<TopicPartition> {
            ts.iter().map(|t| (t.to_string(), 0)).collect()
        };
        let groups = vec![
            ("g1".to_string(), tps(&["t1", "t2"])),
            ("g2".to_string(), tps(&["t2", "t3"])),
            ("g3".to_string(), tps(&["t3"])),
            ("g4".to_string(), tps(&["t2"])),
        ];
        assert_eq!(
            find_relevant_groups(&groups, &group_filter, &topic_filter),
            ["g1", "g2"]
        );
    }
}
