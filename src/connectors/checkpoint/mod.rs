//! MirrorCheckpointConnector and MirrorCheckpointTask: consumer group offset translation
//! (mm2-compat §8).
//!
//! Offsets are not preserved by replication (§13 #4): upstream offset 1000 of `orders-3` may be
//! downstream offset 873 of `A.orders-3`. A consumer group that fails over to the target
//! therefore needs its committed offsets *translated*. MM2 does it in two steps:
//!
//! 1. the source task writes **offset syncs** (`upstream → downstream` pairs) to the
//!    offset-syncs topic (§7.5);
//! 2. the checkpoint task reads them into an [`offset_sync_store::OffsetSyncStore`], translates
//!    every committed offset of its groups, and writes **checkpoints** to
//!    `<source>.checkpoints.internal` on the target (§8.5). Optionally it also commits the
//!    translated offsets into idle target groups (§8.6).
//!
//! This module is the pure logic of that task, with no Kafka I/O, so every numeric case of the
//! Java tests can be checked as a unit test. The slice runner feeds it records and admin results
//! and performs the writes it asks for:
//!
//! * [`offset_sync_store`] — the 64-slot, exponentially spaced sync history per partition (§8.3);
//! * [`checkpoint_store`] — the last checkpoint per `(group, renamed partition)`, loaded from the
//!   checkpoints topic so checkpoints stay monotonic across restarts (§8.4);
//! * [`checkpoints`] — group discovery, renaming and the monotonic filter (§8.1, §8.5);
//! * [`group_sync`] — which target group offsets to alter (§8.6);
//! * [`runner`] — the Kafka I/O around them: the connector and its tasks, once per slice.
//!
//! In the batch job, a slice does what one Java task lifetime does (§14): load the checkpoint
//! store, load the offset-syncs topic (in must-read-to-end mode if the checkpoint load failed),
//! mark the sync store read to end, then compute, filter and emit checkpoints and optionally
//! sync group offsets.

pub mod checkpoint_store;
pub mod checkpoints;
pub mod group_sync;
pub mod offset_sync_store;
pub mod runner;

/// A topic-partition as `(topic, partition)`, like the rest of the crate.
pub type TopicPartition = (String, i32);

/// Java's `OffsetAndMetadata` as MM2 uses it: a committed offset and its metadata.
///
/// Java turns a null metadata into `""`, so `metadata` is never absent; use `""` when there is
/// none. An absent `OffsetAndMetadata` (Java `null`) is modelled as `Option::None` by callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    /// The committed offset: the position of the next record the group will read.
    pub offset: i64,
    /// Commit metadata, `""` when there is none.
    pub metadata: String,
}

impl OffsetAndMetadata {
    /// An offset with empty metadata, like Java's `new OffsetAndMetadata(offset)`.
    pub fn new(offset: i64) -> Self {
        OffsetAndMetadata {
            offset,
            metadata: String::new(),
        }
    }

    /// An offset with metadata.
    pub fn with_metadata(offset: i64, metadata: impl Into<String>) -> Self {
        OffsetAndMetadata {
            offset,
            metadata: metadata.into(),
        }
    }
}
