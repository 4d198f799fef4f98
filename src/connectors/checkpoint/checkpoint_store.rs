//! `CheckpointStore`: the last checkpoint per `(group, renamed partition)` (mm2-compat §8.4).
//!
//! **Why it exists.** The offset-syncs topic is compacted and the sync store forgets history
//! (§8.3), so after a restart the same committed upstream offset may translate to a *lower*
//! downstream offset than the checkpoint already written. Consumers failing over would then
//! re-read data, and the checkpoint stream would go backwards. Since 3.7.1/3.8 the task reads
//! its groups' previous checkpoints from the checkpoints topic once at start-up, and the
//! monotonic filter (§8.5) compares every new checkpoint with the stored one. After start-up the
//! store lives only in memory and is updated with every emitted checkpoint.
//!
//! **Why a failed load changes the sync store.** If the previous checkpoints cannot be read, the
//! filter cannot protect monotonicity across the restart; the task then starts the sync store in
//! must-read-to-end mode (only the newest sync of the initial read survives), which is what
//! [`CheckpointStore::load`] returning `false` tells the caller to do.
//!
//! **Load rules, as Java's `CheckpointStore.readCheckpoints` behaves:**
//!
//! * records for groups not assigned to this task are ignored;
//! * a record that fails to decode (`SchemaException` in Java) is skipped and logged;
//! * a consumer error (for example `TopicAuthorizationException`) **empties** the map and fails
//!   the load (§12.7 #70);
//! * a **tombstone** (null key or value) makes Java's decoder throw a `NullPointerException`,
//!   which is not a `KafkaException`: it escapes Connect's `KafkaBasedLog` and aborts the read.
//!   The load fails (§4.6, §13 #21) but, unlike a consumer error, the map is **not** emptied: it
//!   keeps the checkpoints read before the tombstone, and nothing after it is read. We do the
//!   same (see [`LoadFailure::Tombstone`]).
//!
//! In every case the store is initialized afterwards, so checkpointing can proceed.
//!
//! Checked against `apache/kafka` `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/CheckpointStore.java`
//! and `CheckpointStoreTest.java`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::wire::{Checkpoint, SchemaError};

use super::{OffsetAndMetadata, TopicPartition};

/// A consumer error while reading the checkpoints topic (authorization, timeout, ...).
///
/// The reader wraps whatever its client reported; only the text is kept, for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    /// What the consumer reported.
    pub message: String,
}

impl LoadError {
    /// A load error with the given text.
    pub fn new(message: impl Into<String>) -> Self {
        LoadError {
            message: message.into(),
        }
    }
}

/// Why [`CheckpointStore::load`] returned `false`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadFailure {
    /// The reader reported an error. The map was emptied (Java clears it, §8.4).
    Read(LoadError),
    /// The record at this position (0-based, in the order given to `load`) was a tombstone.
    /// Reading stopped there; checkpoints read before it are kept (Java's NPE path).
    Tombstone {
        /// Position of the tombstone among the records given to `load`.
        index: usize,
    },
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadFailure::Read(e) => write!(f, "error reading the checkpoints topic: {e}"),
            LoadFailure::Tombstone { index } => write!(
                f,
                "record {index} of the checkpoints topic is a tombstone; MM2 never writes those \
                 (Java MM2 fails the same way)"
            ),
        }
    }
}

/// Checkpoints already emitted, per group and renamed (target-side) topic-partition.
#[derive(Debug, Clone, Default)]
pub struct CheckpointStore {
    groups: BTreeSet<String>,
    checkpoints: BTreeMap<String, BTreeMap<TopicPartition, Checkpoint>>,
    initialized: bool,
    failure: Option<LoadFailure>,
    skipped: usize,
}

impl CheckpointStore {
    /// An uninitialized store for this task's assigned groups (`task.assigned.groups`).
    pub fn new<I, S>(assigned_groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        CheckpointStore {
            groups: assigned_groups.into_iter().map(Into::into).collect(),
            ..CheckpointStore::default()
        }
    }

    /// A store that is already initialized with these checkpoints, as if loaded successfully
    /// (Java's test constructor). Every group present is treated as assigned.
    pub fn with_checkpoints(checkpoints: impl IntoIterator<Item = Checkpoint>) -> Self {
        let mut store = CheckpointStore {
            initialized: true,
            ..CheckpointStore::default()
        };
        for cp in checkpoints {
            store.groups.insert(cp.consumer_group_id.clone());
            store.update(&cp);
        }
        store
    }

    /// Loads the checkpoints topic (partition 0, from the beginning to the end), given as
    /// `(key, value)` pairs where `None` is a null key or value. Returns whether the load
    /// succeeded (Java `start()`): on `false` the caller must start the
    /// [`super::offset_sync_store::OffsetSyncStore`] with `initialization_must_read_to_end = true`.
    ///
    /// Replaces anything previously loaded. The store is initialized afterwards in every case.
    pub fn load<'a, I>(&mut self, records: I) -> bool
    where
        I: IntoIterator<Item = Result<(Option<&'a [u8]>, Option<&'a [u8]>), LoadError>>,
    {
        self.checkpoints.clear();
        self.failure = None;
        self.skipped = 0;
        for (index, record) in records.into_iter().enumerate() {
            let (key, value) = match record {
                Ok(kv) => kv,
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        "Exception encountered loading checkpoints topic - this may degrade offset \
                         translation as only checkpoints for offsets which were mirrored after \
                         the task started will be emitted"
                    );
                    self.checkpoints.clear();
                    self.failure = Some(LoadFailure::Read(e));
                    break;
                }
            };
            match Checkpoint::decode_record(key, value) {
                Ok(cp) => {
                    if self.groups.contains(&cp.consumer_group_id) {
                        self.update(&cp);
                    }
                }
                Err(SchemaError::Null { .. }) => {
                    let failure = LoadFailure::Tombstone { index };
                    tracing::warn!(%failure, "checkpoint store load failed");
                    self.failure = Some(failure);
                    break;
                }
                Err(e) => {
                    tracing::warn!(index, error = %e, "Ignored invalid checkpoint record");
                    self.skipped += 1;
                }
            }
        }
        self.initialized = true;
        tracing::debug!(
            load_success = self.failure.is_none(),
            groups = self.checkpoints.len(),
            "CheckpointStore started"
        );
        self.failure.is_none()
    }

    /// Whether [`CheckpointStore::load`] has run (successfully or not). The task emits nothing
    /// before that (§12.6 #68).
    pub fn is_initialized(&self) -> bool {
        self.initialized
    }

    /// Whether the last load succeeded; `false` before any load.
    pub fn load_succeeded(&self) -> bool {
        self.initialized && self.failure.is_none()
    }

    /// Why the last load failed, if it did.
    pub fn load_failure(&self) -> Option<&LoadFailure> {
        self.failure.as_ref()
    }

    /// How many records the last load skipped because they did not decode.
    pub fn skipped_records(&self) -> usize {
        self.skipped
    }

    /// The groups this store keeps checkpoints for.
    pub fn assigned_groups(&self) -> &BTreeSet<String> {
        &self.groups
    }

    /// The last checkpoints of a group, by renamed topic-partition; `None` if the group has no
    /// entry at all (which the monotonic filter treats as "first for this group").
    pub fn get(&self, group: &str) -> Option<&BTreeMap<TopicPartition, Checkpoint>> {
        self.checkpoints.get(group)
    }

    /// The last checkpoint of a group on one renamed topic-partition.
    pub fn get_partition(&self, group: &str, topic: &str, partition: i32) -> Option<&Checkpoint> {
        // BTreeMap<(String, i32)> cannot be queried by (&str, i32) without allocating.
        self.checkpoints
            .get(group)?
            .get(&(topic.to_string(), partition))
    }

    /// Records an emitted checkpoint as the latest for its `(group, renamed TP)`.
    pub fn update(&mut self, checkpoint: &Checkpoint) {
        self.checkpoints
            .entry(checkpoint.consumer_group_id.clone())
            .or_default()
            .insert(
                (checkpoint.topic.clone(), checkpoint.partition),
                checkpoint.clone(),
            );
    }

    /// Java `update(group, newCheckpoints)`: records a poll's checkpoints for a group. Like Java,
    /// the group gets an (possibly empty) entry even when nothing was emitted.
    pub fn update_group<'a>(
        &mut self,
        group: &str,
        checkpoints: impl IntoIterator<Item = &'a Checkpoint>,
    ) {
        self.checkpoints.entry(group.to_string()).or_default();
        for cp in checkpoints {
            self.update(cp);
        }
    }

    /// Java `computeConvertedUpstreamOffset`: per group, renamed TP → (downstream offset,
    /// metadata), the offsets group sync would commit on the target (§8.6).
    pub fn converted_upstream_offsets(
        &self,
    ) -> BTreeMap<String, BTreeMap<TopicPartition, OffsetAndMetadata>> {
        self.checkpoints
            .iter()
            .map(|(group, cps)| {
                let converted = cps
                    .iter()
                    .map(|(tp, cp)| {
                        (
                            tp.clone(),
                            OffsetAndMetadata::with_metadata(
                                cp.downstream_offset,
                                cp.metadata.clone(),
                            ),
                        )
                    })
                    .collect();
                (group.clone(), converted)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(group: &str, topic: &str, partition: i32, up: i64, down: i64) -> Checkpoint {
        Checkpoint {
            consumer_group_id: group.into(),
            topic: topic.into(),
            partition,
            upstream_offset: up,
            downstream_offset: down,
            metadata: String::new(),
        }
    }

    fn encoded(c: &Checkpoint) -> (Vec<u8>, Vec<u8>) {
        (c.encode_key().unwrap(), c.encode_value().unwrap())
    }

    type Rec<'a> = Result<(Option<&'a [u8]>, Option<&'a [u8]>), LoadError>;

    fn ok(kv: &(Vec<u8>, Vec<u8>)) -> Rec<'_> {
        Ok((Some(kv.0.as_slice()), Some(kv.1.as_slice())))
    }

    // §12.7 #69 (Java testReadCheckpointsTopic).
    #[test]
    fn load_keeps_latest_per_assigned_group_and_skips_malformed() {
        let first = encoded(&cp("group1", "t1", 0, 0, 0));
        let other_group = encoded(&cp("group2", "t1", 0, 0, 0));
        let empty: &[u8] = &[];
        let latest = encoded(&cp("group1", "t1", 0, 1, 1));

        let mut store = CheckpointStore::new(["group1"]);
        assert!(!store.is_initialized());
        let ok_load = store.load(vec![
            ok(&first),
            ok(&other_group),
            Ok((Some(empty), Some(empty))),
            ok(&latest),
        ]);
        assert!(ok_load, "expected the load to succeed");
        assert!(store.is_initialized());
        assert!(store.load_succeeded());
        assert_eq!(store.skipped_records(), 1);

        let mut expected = BTreeMap::new();
        expected.insert(("t1".to_string(), 0), cp("group1", "t1", 0, 1, 1));
        assert_eq!(store.get("group1"), Some(&expected));
        assert_eq!(store.get("group2"), None);
        assert_eq!(store.converted_upstream_offsets().len(), 1);
    }

    // §12.7 #70 (Java testReadCheckpointsTopicError): a consumer error empties the map, fails the
    // load, and still initializes the store.
    #[test]
    fn read_error_empties_map_and_fails() {
        let rec = encoded(&cp("group1", "topic", 1, 0, 0));
        let mut store = CheckpointStore::new(["group1"]);
        let loaded = store.load(vec![
            ok(&rec),
            Err(LoadError::new("TopicAuthorizationException: test")),
        ]);
        assert!(!loaded, "expected the load to fail");
        assert!(store.is_initialized());
        assert!(!store.load_succeeded());
        assert_eq!(store.get("group1"), None);
        assert!(store.converted_upstream_offsets().is_empty());
        assert!(matches!(store.load_failure(), Some(LoadFailure::Read(_))));
    }

    // §4.6, §13 #21: a tombstone fails the load; records before it are kept, later ones unread.
    #[test]
    fn tombstone_fails_load_but_keeps_earlier_records() {
        let before = encoded(&cp("group1", "t1", 0, 5, 6));
        let after = encoded(&cp("group1", "t1", 1, 7, 8));
        let mut store = CheckpointStore::new(["group1"]);
        let loaded = store.load(vec![
            ok(&before),
            Ok((Some(before.0.as_slice()), None)),
            ok(&after),
        ]);
        assert!(!loaded);
        assert!(store.is_initialized());
        assert_eq!(
            store.load_failure(),
            Some(&LoadFailure::Tombstone { index: 1 })
        );
        assert_eq!(
            store.get_partition("group1", "t1", 0),
            Some(&cp("group1", "t1", 0, 5, 6))
        );
        assert_eq!(store.get_partition("group1", "t1", 1), None);
    }

    // §4.6: a tombstone of another group fails the load too (Java decodes before filtering).
    #[test]
    fn tombstone_of_unassigned_group_still_fails() {
        let mut store = CheckpointStore::new(["group1"]);
        assert!(!store.load(vec![Ok((None, None))]));
    }

    #[test]
    fn empty_topic_loads_ok() {
        let mut store = CheckpointStore::new(["g"]);
        assert!(store.load(Vec::<Rec<'_>>::new()));
        assert!(store.load_succeeded());
        assert_eq!(store.get("g"), None);
    }

    // §8.4: after start-up the store is updated with every emitted checkpoint.
    #[test]
    fn update_replaces_per_partition() {
        let mut store = CheckpointStore::new(["g"]);
        store.update(&cp("g", "A.t", 0, 10, 11));
        store.update(&cp("g", "A.t", 1, 3, 4));
        store.update(&cp("g", "A.t", 0, 20, 21));
        assert_eq!(store.get("g").unwrap().len(), 2);
        assert_eq!(
            store
                .get_partition("g", "A.t", 0)
                .map(|c| c.downstream_offset),
            Some(21)
        );
        let converted = store.converted_upstream_offsets();
        assert_eq!(
            converted["g"][&("A.t".to_string(), 0)],
            OffsetAndMetadata::new(21)
        );
    }

    // Java update(group, {}) leaves an empty entry: the group is then "known" to the filter.
    #[test]
    fn update_group_creates_entry_even_when_empty() {
        let mut store = CheckpointStore::new(["g"]);
        assert_eq!(store.get("g"), None);
        store.update_group("g", &[]);
        assert_eq!(store.get("g").map(|m| m.len()), Some(0));
    }

    #[test]
    fn with_checkpoints_is_initialized() {
        let store = CheckpointStore::with_checkpoints([cp("g", "t", 0, 1, 2)]);
        assert!(store.is_initialized());
        assert!(store.load_succeeded());
        assert!(store.assigned_groups().contains("g"));
    }
}
