//! Connect source offsets in `mm2-offsets.<source>.internal`, loaded without reading history.
//!
//! Java's `KafkaOffsetBackingStore` reads the whole offsets topic at start-up and keeps it in
//! memory; that is fine for a worker that runs for months, but a slice that starts every few
//! minutes would pay for every offset ever committed, every time. So a task remembers a
//! **position hint** beside its lease (in a [`StateStore`]):
//!
//! ```json
//! {"version":1,"topic":"mm2-offsets.A.internal","partition_count":25,
//!  "connector":"MirrorSourceConnector","positions":{"4":1200},
//!  "values":{"[\"MirrorSourceConnector\",{\"cluster\":\"A\",\"partition\":0,\"topic\":\"t1\"}]":41}}
//! ```
//!
//! `positions[p]` is an offset X of offsets-topic partition p, and `values` are the task's keys'
//! values as of X (`null` = no offset). Loading starts from those values and reads each
//! partition that holds one of our keys from X to the end, overlaying newer records in order
//! (a tombstone deletes) — so offsets written by anyone else after X (a Java MM2, an offset
//! reset through Connect's REST API) are seen. Cost: the records written since the last slice,
//! not the topic's history.
//!
//! The hint is only a shortcut. It is ignored, with a full read instead, when it is missing or
//! corrupt, names another topic or partition count, lacks our keys, or points past the end of a
//! partition (the topic was recreated). "Past the end" is tested without trusting ListOffsets
//! (tansu's trails the real end): when ListOffsets says the end is below X we read from there
//! and see where partition EOF lands. Records with other keys are skipped by comparing raw key
//! bytes, without parsing them.
//!
//! A full read covers **every** partition, as Java's `KafkaOffsetBackingStore` does: writers
//! place a key by the partition count they see, so after the topic gains partitions a key's
//! older records sit where its hash no longer points (docs/connect-offsets.md). The hint records
//! whether that read found every keyed record on its own partition (`"placed": true`); only then
//! may a key the hint does not cover be read from its own partition alone. A key's latest record
//! wins; a malformed record that a later one superseded is ignored, as in Java.
//!
//! **Fences.** Our commits carry the writing slice's connector-lease token
//! (`{"offset":41,"fence":7}`, see [`OffsetStore::with_commit_fence`]). A commit sent before a
//! freeze can be written at the thaw, after a successor's: it then carries a lower fence than
//! the value it lands on, and a load skips it ([`fence_admits`]), so the stored position never
//! moves back to where the stale writer was. Records without a fence (Java's, tombstones)
//! always apply.
//!
//! A commit writes only the values that changed, on the partition `murmur2(key) % partitions`
//! (over the topic's actual partition count), waits for delivery, and moves the hint forward
//! only where our records were the only ones written since the known position: if anyone else
//! wrote in between, the next load reads their records too.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::config::Props;
use crate::kafka::internal_log::{display_key, InternalLog, LogError, BEGINNING};
use crate::state::{StateError, StateStore};
use crate::wire::connect_offsets::{
    decode_stored, fence_admits, offsets_partition, stored_offset_bytes, stored_offset_json,
    value_fence, SourcePartition, StoredOffset, MIRROR_SOURCE_CONNECTOR,
};
use crate::wire::ConnectRecordError;

/// Default bound for reading the offsets topic at load.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(120);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const HINT_VERSION: i64 = 1;

/// A [`SourcePartition`] usable as a map key (ordered and hashed by its fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionKey(pub SourcePartition);

impl PartitionKey {
    /// `MirrorSourceConnector`'s partition: upstream `topic`-`partition` of cluster `cluster`.
    pub fn source(cluster: &str, topic: &str, partition: i32) -> Self {
        PartitionKey(SourcePartition::Source {
            cluster: cluster.to_string(),
            topic: topic.to_string(),
            partition,
        })
    }

    fn sort_key(&self) -> (u8, &str, &str, i32) {
        match &self.0 {
            SourcePartition::Source {
                cluster,
                topic,
                partition,
            } => (0, cluster, topic, *partition),
            SourcePartition::Checkpoint {
                partition,
                topic,
                group,
            } => (1, group, topic, *partition),
            SourcePartition::Heartbeat {
                source_cluster_alias,
                target_cluster_alias,
            } => (2, source_cluster_alias, target_cluster_alias, 0),
        }
    }
}

impl From<SourcePartition> for PartitionKey {
    fn from(p: SourcePartition) -> Self {
        PartitionKey(p)
    }
}

impl Ord for PartitionKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl PartialOrd for PartitionKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::hash::Hash for PartitionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.sort_key().hash(state)
    }
}

/// The result of [`OffsetStore::load`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedOffsets {
    /// The stored offset of each requested partition that has one. For `MirrorSourceConnector`
    /// this is the last replicated upstream offset: resume at +1.
    pub offsets: BTreeMap<PartitionKey, i64>,
    /// The source topic ID stored beside each offset, where there is one
    /// ([`StoredOffset::topic_id`]).
    pub topic_ids: BTreeMap<PartitionKey, String>,
    /// True when no hint was used (missing or invalid) and all our partitions were read from
    /// the beginning. With a hint, partitions it does not cover are still read in full.
    pub full_read: bool,
    /// Records received from the offsets topic (all keys), for the slice report.
    pub records_read: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum OffsetStoreError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    State(#[from] StateError),
    /// One of our keys has a value Java could not read either (`MirrorUtils.unwrapOffset`).
    #[error("{topic} partition {partition} offset {offset}: stored offset for key {key} is invalid: {source}")]
    BadValue {
        topic: String,
        partition: i32,
        offset: i64,
        key: String,
        #[source]
        source: ConnectRecordError,
    },
}

/// One of our keys.
#[derive(Debug, Clone)]
struct Tracked {
    key: Vec<u8>,
    log_partition: i32,
}

/// A parsed position hint.
#[derive(Debug, Default)]
struct Hint {
    positions: BTreeMap<i32, i64>,
    values: HashMap<String, Option<StoredOffset>>,
    /// `Some(true)`: a read of every partition found each keyed record on the partition its key
    /// hashes to over `partition_count`, so a key the hint does not cover can be read from its
    /// own partition alone. `Some(false)`: the topic gained partitions after some records were
    /// written. `None`: not known (a hint from before this was recorded).
    placed: Option<bool>,
}

/// Source offsets of one task (or one connector's set of partitions).
pub struct OffsetStore {
    log: InternalLog,
    partitions: i32,
    connector: String,
    state: Arc<dyn StateStore>,
    hint_key: String,
    /// The writing task's lease token: hint writes are fenced by it ([`StateStore::put_fenced`]).
    fencing_token: Option<u64>,
    /// Stamped on committed values, see [`OffsetStore::with_commit_fence`].
    commit_fence: Option<u64>,
    /// Hint writes give up at this instant (the writer's lease validity), see
    /// [`OffsetStore::hint_writes_until`].
    hint_until: Option<Instant>,
    /// Commits write the hint at most this often (zero: at every commit); see
    /// [`OffsetStore::with_hint_interval`].
    hint_interval: Duration,
    /// When the hint was last written (or the store made), for `hint_interval`.
    hint_saved_at: Instant,
    /// A commit moved positions the stored hint does not show yet.
    hint_stale: bool,
    read_timeout: Duration,
    tracked: BTreeMap<PartitionKey, Tracked>,
    /// Known stored value of each tracked key (`None` = no offset), as of `positions`.
    values: BTreeMap<PartitionKey, Option<StoredOffset>>,
    /// Offsets-topic partition → position the tracked keys' values are known at.
    positions: BTreeMap<i32, i64>,
    /// What the last read of every partition found, see [`Hint::placed`].
    placed: Option<bool>,
}

impl std::fmt::Debug for OffsetStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetStore")
            .field("topic", &self.log.topic())
            .field("partitions", &self.partitions)
            .field("connector", &self.connector)
            .field("hint_key", &self.hint_key)
            .finish_non_exhaustive()
    }
}

impl OffsetStore {
    /// `topic` with `partitions` partitions (the actual count, from
    /// [`crate::connect::internal_topics::ensure_worker_topics`]); `consumer` and `producer` are
    /// Java-named client settings for the target cluster; the hint lives in `state` under
    /// `hint_key` (e.g. `A->B/MirrorSourceConnector/0/offsets-hint`).
    pub fn new(
        topic: impl Into<String>,
        partitions: i32,
        consumer: Props,
        producer: Props,
        state: Arc<dyn StateStore>,
        hint_key: impl Into<String>,
    ) -> Self {
        assert!(
            partitions > 0,
            "offsets topic partition count must be positive"
        );
        OffsetStore {
            log: InternalLog::new(topic, consumer, producer),
            partitions,
            connector: MIRROR_SOURCE_CONNECTOR.to_string(),
            state,
            hint_key: hint_key.into(),
            fencing_token: None,
            commit_fence: None,
            hint_until: None,
            hint_interval: Duration::ZERO,
            hint_saved_at: Instant::now(),
            hint_stale: false,
            read_timeout: DEFAULT_READ_TIMEOUT,
            tracked: BTreeMap::new(),
            values: BTreeMap::new(),
            positions: BTreeMap::new(),
            placed: None,
        }
    }

    /// Fence the position hint by the writing task's lease token: a stale holder's write is
    /// refused once its successor wrote.
    pub fn fenced_by(mut self, fencing_token: u64) -> Self {
        self.fencing_token = Some(fencing_token);
        self
    }

    /// Stamp committed values with `fence`, the writing slice's connector-lease token. Task
    /// tokens would not do: they count per task id, and a partition moves between tasks. The
    /// connector token grows from one writer of a partition to the next, since task leases are
    /// taken only under the connector lease and a partition's next writer starts only after its
    /// last one's task lease ended (see `slice::assignment`).
    pub fn with_commit_fence(mut self, fence: u64) -> Self {
        self.commit_fence = Some(fence);
        self
    }

    /// Commits write the position hint at most every `interval`; the writer calls
    /// [`OffsetStore::save_hint_if_stale`] when it is done. A hint costs a state-store read and
    /// write (two DynamoDB round trips), too much for every commit of a copy that commits every
    /// second; a hint that lags the commits only makes the next load read a little more.
    pub fn with_hint_interval(mut self, interval: Duration) -> Self {
        self.hint_interval = interval;
        self
    }

    /// Writes the position hint if a commit moved positions since it was last written.
    pub fn save_hint_if_stale(&mut self) -> Result<(), OffsetStoreError> {
        if self.hint_stale {
            self.save_hint()?;
        }
        Ok(())
    }

    /// Hint writes from now on give up at `until` (e.g. when the writer's lease stops being
    /// trusted): a stalled state store must not hold the copy loop, and a hint not written
    /// only makes the next load read more of the topic.
    pub fn hint_writes_until(&mut self, until: Instant) {
        self.hint_until = Some(until);
    }

    /// The Connect connector name in the keys (default `MirrorSourceConnector`).
    pub fn with_connector(mut self, connector: impl Into<String>) -> Self {
        self.connector = connector.into();
        self
    }

    /// Bound for each read of the offsets topic.
    pub fn with_read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    pub fn topic(&self) -> &str {
        self.log.topic()
    }

    /// The key bytes and offsets-topic partition of a source partition.
    pub fn placement(&self, partition: &SourcePartition) -> (Vec<u8>, i32) {
        let key = partition.key_bytes(&self.connector);
        let p = offsets_partition(&key, self.partitions);
        (key, p)
    }

    fn track(&mut self, k: &PartitionKey) {
        if !self.tracked.contains_key(k) {
            let (key, log_partition) = self.placement(&k.0);
            self.tracked
                .insert(k.clone(), Tracked { key, log_partition });
        }
    }

    /// Loads the stored offsets of `partitions`, using the hint when it is valid, and saves an
    /// updated hint.
    pub async fn load(
        &mut self,
        partitions: &[SourcePartition],
    ) -> Result<LoadedOffsets, OffsetStoreError> {
        self.tracked.clear();
        self.values.clear();
        self.positions.clear();
        self.placed = None;
        let keys: Vec<PartitionKey> = partitions.iter().cloned().map(PartitionKey).collect();
        for k in &keys {
            self.track(k);
        }
        let needed: BTreeSet<i32> = self.tracked.values().map(|t| t.log_partition).collect();

        let mut records_read = 0;
        // How far the log is known to reach: a valid hint's positions, unless it was found to
        // point past the end (a recreated topic: waiting for those positions would be in vain).
        let min_ends = match self.read_hint()? {
            Ok(hint) => match self.hinted_partitions(&needed, &hint) {
                Ok(hinted) => match self.read_with_hint(&needed, &hinted, &hint).await? {
                    Ok(n) => {
                        self.save_hint()?;
                        return Ok(self.loaded(&keys, false, n));
                    }
                    Err((n, reason)) => {
                        records_read += n;
                        self.log_full_read("offsets hint is invalid", &reason);
                        self.values.clear();
                        self.positions.clear();
                        BTreeMap::new()
                    }
                },
                Err(reason) => {
                    self.log_full_read("offsets hint is not enough", &reason);
                    hint.positions
                }
            },
            Err(reason) => {
                self.log_full_read("no usable offsets hint", &reason);
                BTreeMap::new()
            }
        };
        records_read += self.read_from_beginning(&min_ends).await?;
        self.save_hint()?;
        Ok(self.loaded(&keys, true, records_read))
    }

    /// The stored hint, `Err(reason)` when there is none or it cannot be used. A corrupt document
    /// is only a lost shortcut; a store that cannot be read fails the load.
    fn read_hint(&self) -> Result<Result<Hint, String>, OffsetStoreError> {
        match self.state.get(&self.hint_key) {
            Ok(None) => Ok(Err("no hint stored".to_string())),
            Ok(Some(v)) => Ok(self.parse_hint(&v).inspect_err(|reason| {
                tracing::warn!(hint = %self.hint_key, %reason, "offsets hint cannot be used; ignoring it");
            })),
            Err(e @ StateError::Corrupt { .. }) => {
                tracing::warn!(hint = %self.hint_key, error = %e, "offsets hint is corrupt; ignoring it");
                Ok(Err(e.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The `needed` partitions the hint covers (it knows every one of our keys on them), with
    /// its positions there; `Err(reason)` when a read from the beginning is needed instead.
    /// Partitions it does not cover are read from the beginning beside it only when the hint
    /// knows that every key sits on its own partition ([`Hint::placed`]).
    fn hinted_partitions(
        &self,
        needed: &BTreeSet<i32>,
        hint: &Hint,
    ) -> Result<BTreeMap<i32, i64>, String> {
        let mut hinted: BTreeMap<i32, i64> = BTreeMap::new();
        for &p in needed {
            let Some(&x) = hint.positions.get(&p) else {
                continue;
            };
            let all_known = self
                .tracked
                .values()
                .filter(|t| t.log_partition == p)
                .all(|t| hint.values.contains_key(&key_string(&t.key)));
            if all_known {
                hinted.insert(p, x);
            }
        }
        if hinted.is_empty() {
            return Err("the hint does not cover our keys".into());
        }
        if hinted.len() < needed.len() && hint.placed != Some(true) {
            return Err(format!(
                "the hint covers {} of our {} partitions, and whether every key sits on its own \
                 partition is not known (the topic may have gained partitions)",
                hinted.len(),
                needed.len()
            ));
        }
        Ok(hinted)
    }

    fn log_full_read(&self, what: &str, reason: &str) {
        tracing::info!(
            hint = %self.hint_key,
            topic = %self.topic(),
            %reason,
            "{what}; reading every partition of the offsets topic from the beginning"
        );
    }

    fn loaded(&self, keys: &[PartitionKey], full_read: bool, records_read: usize) -> LoadedOffsets {
        let stored = || {
            keys.iter()
                .filter_map(|k| Some((k, self.values.get(k)?.as_ref()?)))
        };
        LoadedOffsets {
            offsets: stored().map(|(k, v)| (k.clone(), v.offset)).collect(),
            topic_ids: stored()
                .filter_map(|(k, v)| Some((k.clone(), v.topic_id.clone()?)))
                .collect(),
            full_read,
            records_read,
        }
    }

    /// Reads every partition of the offsets topic from the beginning, replacing what we know.
    /// Every partition, as Java does: a key's records stay where they were written when the
    /// topic gains partitions, while its hash now points elsewhere.
    /// `min_ends`: positions the log is known to reach (a valid hint's), read at least that far.
    async fn read_from_beginning(
        &mut self,
        min_ends: &BTreeMap<i32, i64>,
    ) -> Result<usize, OffsetStoreError> {
        for k in self.tracked.keys() {
            self.values.insert(k.clone(), None);
        }
        let starts: BTreeMap<i32, i64> = (0..self.partitions).map(|p| (p, BEGINNING)).collect();
        let apply_from: BTreeMap<i32, i64> = (0..self.partitions).map(|p| (p, 0)).collect();
        let (n, ends) = self
            .replay(&starts, &apply_from, min_ends, Scope::AllPartitions)
            .await?;
        self.positions = ends;
        Ok(n)
    }

    /// Reads from the hint positions. `Ok(Err((records, reason)))` when the hint turns out to
    /// point past the end of a partition.
    async fn read_with_hint(
        &mut self,
        needed: &BTreeSet<i32>,
        hinted: &BTreeMap<i32, i64>,
        hint: &Hint,
    ) -> Result<Result<usize, (usize, String)>, OffsetStoreError> {
        // Values as of the hint positions; unhinted partitions start empty, from the beginning.
        for (k, t) in &self.tracked {
            let v = if hinted.contains_key(&t.log_partition) {
                hint.values.get(&key_string(&t.key)).cloned().flatten()
            } else {
                None
            };
            self.values.insert(k.clone(), v);
        }
        // ListOffsets only proves "the log reaches at least here"; below X, verify by reading.
        let probe: Vec<i32> = hinted
            .iter()
            .filter(|(_, &x)| x > 0)
            .map(|(&p, _)| p)
            .collect();
        let lower = self
            .log
            .end_offsets_lower_bound(&probe, REQUEST_TIMEOUT)
            .await?;
        let mut starts = BTreeMap::new();
        let mut apply_from = BTreeMap::new();
        let mut verify = BTreeMap::new();
        for &p in needed {
            match hinted.get(&p) {
                Some(&x) => {
                    let h = lower.get(&p).copied().unwrap_or(x);
                    if h >= x {
                        starts.insert(p, x);
                    } else {
                        starts.insert(p, h.max(0));
                        verify.insert(p, x);
                    }
                    apply_from.insert(p, x);
                }
                None => {
                    starts.insert(p, BEGINNING);
                    apply_from.insert(p, 0);
                }
            }
        }
        // The hint's positions were written by a task of this flow after reading or writing
        // there: the log reaches them. Read at least that far, even from a broker that serves
        // records a moment after acknowledging them (a shorter read would look like a recreated
        // topic below, or miss the last commit).
        let (n, ends) = self
            .replay(&starts, &apply_from, &hint.positions, Scope::Placement)
            .await?;
        for (p, x) in verify {
            let end = ends.get(&p).copied().unwrap_or(0);
            if end < x {
                return Ok(Err((
                    n,
                    format!(
                        "partition {p} ends at offset {end}, before the hint position {x} \
                         (was the topic recreated?)"
                    ),
                )));
            }
        }
        self.positions = ends;
        self.placed = hint.placed;
        Ok(Ok(n))
    }

    /// Reads from `starts`, applying records of our keys at or after `apply_from`. Returns the
    /// number of records received and each partition's end. With [`Scope::AllPartitions`] a
    /// key's records are taken from any partition and `self.placed` is set (see [`Hint`]); with
    /// [`Scope::Placement`] only from the partition its hash places it on.
    async fn replay(
        &mut self,
        starts: &BTreeMap<i32, i64>,
        apply_from: &BTreeMap<i32, i64>,
        min_ends: &BTreeMap<i32, i64>,
        scope: Scope,
    ) -> Result<(usize, BTreeMap<i32, i64>), OffsetStoreError> {
        let by_key: HashMap<&[u8], (&PartitionKey, i32)> = self
            .tracked
            .iter()
            .map(|(k, t)| (t.key.as_slice(), (k, t.log_partition)))
            .collect();
        let partitions = self.partitions;
        let mut n = 0usize;
        let mut misplaced = 0usize;
        let mut stale = 0usize;
        // Per key, the last record on each partition that its fence admits (records arrive in
        // offset order); on the key's own partition, after the value known at `apply_from`.
        let mut seen: HashMap<PartitionKey, BTreeMap<i32, Seen>> = HashMap::new();
        let values = &self.values;
        let ends = self
            .log
            .read_to_at_least_with(starts, min_ends, self.read_timeout, |r| {
                n += 1;
                let Some(key) = r.key else { return };
                if scope == Scope::AllPartitions
                    && offsets_partition(key, partitions) != r.partition
                {
                    misplaced += 1;
                }
                let Some(&(k, placement)) = by_key.get(key) else {
                    return;
                };
                if r.offset < apply_from.get(&r.partition).copied().unwrap_or(0)
                    || (scope == Scope::Placement && r.partition != placement)
                {
                    return;
                }
                let fence = value_fence(r.value);
                let last = seen
                    .get(k)
                    .and_then(|by_partition| by_partition.get(&r.partition));
                let current = match last {
                    Some(last) => last.fence,
                    None if r.partition == placement => {
                        values.get(k).and_then(Option::as_ref).and_then(|v| v.fence)
                    }
                    None => None,
                };
                if !fence_admits(fence, current) {
                    stale += 1;
                    return;
                }
                seen.entry(k.clone()).or_default().insert(
                    r.partition,
                    Seen {
                        offset: r.offset,
                        timestamp: r.timestamp,
                        value: r.value.map(<[u8]>::to_vec),
                        fence,
                    },
                );
            })
            .await?;
        if stale > 0 {
            tracing::info!(
                topic = %self.topic(),
                stale,
                "skipped offsets written late by a slice whose lease had passed on (lower fence)"
            );
        }
        if scope == Scope::AllPartitions {
            self.placed = Some(misplaced == 0);
            if misplaced > 0 {
                tracing::warn!(
                    topic = %self.topic(),
                    partitions,
                    misplaced,
                    "offsets topic has records off the partition their key hashes to: it gained \
                     partitions after they were written; our offsets are read from every partition"
                );
            }
        }
        for (k, by_partition) in seen {
            let placement = self.tracked[&k].log_partition;
            let (p, last) = latest_write(&by_partition, placement);
            if p != placement {
                tracing::warn!(
                    topic = %self.topic(),
                    key = %display_key(&self.tracked[&k].key),
                    partition = p,
                    offset = last.offset,
                    placement,
                    "stored offset found only off its key's partition (written before the topic \
                     gained partitions); using it"
                );
            }
            let value = decode_stored(last.value.as_deref()).map_err(|source| {
                OffsetStoreError::BadValue {
                    topic: self.topic().to_string(),
                    partition: p,
                    offset: last.offset,
                    key: display_key(&self.tracked[&k].key),
                    source,
                }
            })?;
            self.values.insert(k, value);
        }
        Ok((n, ends))
    }

    /// [`OffsetStore::commit_stored`] of offsets without topic IDs (Java's values).
    pub async fn commit(
        &mut self,
        offsets: &BTreeMap<PartitionKey, i64>,
    ) -> Result<usize, OffsetStoreError> {
        let plain = offsets
            .iter()
            .map(|(k, &o)| (k.clone(), StoredOffset::plain(o)))
            .collect();
        self.commit_stored(&plain).await
    }

    /// Writes the offsets that differ from what is stored (in offset or topic ID), waits for
    /// delivery, and saves the hint. Returns the number of records written.
    pub async fn commit_stored(
        &mut self,
        offsets: &BTreeMap<PartitionKey, StoredOffset>,
    ) -> Result<usize, OffsetStoreError> {
        let mut records = Vec::new();
        let mut written: Vec<(PartitionKey, StoredOffset)> = Vec::new();
        for (k, v) in offsets {
            self.track(k);
            let known = self.values.get(k).and_then(Option::as_ref);
            if known.is_some_and(|known| known.same_position(v)) {
                continue;
            }
            let v = &self.fenced(k, v, known);
            let t = &self.tracked[k];
            records.push((t.log_partition, t.key.clone(), Some(stored_offset_bytes(v))));
            written.push((k.clone(), v.clone()));
        }
        if records.is_empty() {
            return Ok(0);
        }
        let delivered = self.log.append(records).await?;
        let count = written.len();
        for (k, v) in written {
            self.values.insert(k, Some(v));
        }
        // Advance a partition's position only if our records directly follow it: then nothing
        // anyone else wrote can hide between the old position and the new one.
        let mut by_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
        for (p, o) in delivered {
            by_partition.entry(p).or_default().push(o);
        }
        for (p, mut offs) in by_partition {
            offs.sort_unstable();
            if let Some(x) = self.positions.get_mut(&p) {
                let contiguous = offs.iter().enumerate().all(|(i, &o)| o == *x + i as i64);
                if contiguous {
                    *x += offs.len() as i64;
                }
            }
        }
        self.hint_stale = true;
        if self.hint_saved_at.elapsed() >= self.hint_interval {
            self.save_hint()?;
        }
        Ok(count)
    }

    /// `v` stamped with the commit fence, unless the stored value carries a higher one: the
    /// lease store was reset (a recreated table, a flow moved between the local and the
    /// DynamoDB store) and its tokens started again. Every load would skip our values behind
    /// that one, so this one goes without a fence, which any record replaces; the next is
    /// fenced again.
    fn fenced(
        &self,
        k: &PartitionKey,
        v: &StoredOffset,
        known: Option<&StoredOffset>,
    ) -> StoredOffset {
        let mut v = v.clone();
        v.fence = self.commit_fence.or(v.fence);
        let stored_fence = known.and_then(|known| known.fence);
        if let (Some(ours), Some(stored)) = (v.fence, stored_fence) {
            if stored > ours {
                tracing::warn!(
                    topic = %self.topic(),
                    key = %display_key(&self.tracked[k].key),
                    stored_fence = stored,
                    our_fence = ours,
                    "stored offset has a higher fence than this slice's lease token (was the \
                     lease store reset?); writing this commit without a fence"
                );
                v.fence = None;
            }
        }
        v
    }

    fn parse_hint(&self, v: &Value) -> Result<Hint, String> {
        let obj = v.as_object().ok_or("hint is not a JSON object")?;
        if obj.get("version").and_then(Value::as_i64) != Some(HINT_VERSION) {
            return Err("hint has an unknown version".into());
        }
        let topic = obj.get("topic").and_then(Value::as_str);
        if topic != Some(self.topic()) {
            return Err(format!(
                "hint is for topic {}, not {}",
                topic.unwrap_or("?"),
                self.topic()
            ));
        }
        let count = obj.get("partition_count").and_then(Value::as_i64);
        if count != Some(i64::from(self.partitions)) {
            return Err(format!(
                "hint was taken with {} partitions, the topic now has {}",
                count.map_or("?".to_string(), |c| c.to_string()),
                self.partitions
            ));
        }
        let connector = obj.get("connector").and_then(Value::as_str);
        if connector != Some(self.connector.as_str()) {
            return Err(format!(
                "hint is for connector {}, not {}",
                connector.unwrap_or("?"),
                self.connector
            ));
        }
        let mut hint = Hint::default();
        let positions = obj
            .get("positions")
            .and_then(Value::as_object)
            .ok_or("hint has no positions")?;
        for (p, x) in positions {
            let p: i32 = p.parse().map_err(|_| format!("bad hint partition {p:?}"))?;
            let x = x
                .as_i64()
                .filter(|x| *x >= 0)
                .ok_or_else(|| format!("bad hint position for partition {p}"))?;
            if p < 0 || p >= self.partitions {
                return Err(format!("hint partition {p} out of range"));
            }
            hint.positions.insert(p, x);
        }
        let values = obj
            .get("values")
            .and_then(Value::as_object)
            .ok_or("hint has no values")?;
        for (k, v) in values {
            let v = hint_value(v).ok_or_else(|| format!("bad hint value for key {k}"))?;
            hint.values.insert(k.clone(), v);
        }
        hint.placed = obj.get("placed").and_then(Value::as_bool);
        Ok(hint)
    }

    fn save_hint(&mut self) -> Result<(), OffsetStoreError> {
        self.hint_saved_at = Instant::now();
        let positions: Map<String, Value> = self
            .positions
            .iter()
            .map(|(p, x)| (p.to_string(), json!(x)))
            .collect();
        let values: Map<String, Value> = self
            .tracked
            .iter()
            .filter(|(_, t)| self.positions.contains_key(&t.log_partition))
            .filter_map(|(k, t)| {
                // Only values we know as of the position (not "tracked but never read").
                let v = self.values.get(k)?;
                Some((
                    key_string(&t.key),
                    v.as_ref().map_or(Value::Null, hint_json),
                ))
            })
            .collect();
        let mut doc = json!({
            "version": HINT_VERSION,
            "topic": self.topic(),
            "partition_count": self.partitions,
            "connector": self.connector,
            "positions": positions,
            "values": values,
        });
        if let Some(placed) = self.placed {
            doc["placed"] = json!(placed);
        }
        // An idle slice finds the hint it read: no write (a round trip on DynamoDB).
        if self.state.get(&self.hint_key).ok().flatten().as_ref() == Some(&doc) {
            self.hint_stale = false;
            return Ok(());
        }
        let state = self
            .hint_until
            .and_then(|until| self.state.bounded_by(until))
            .unwrap_or_else(|| self.state.clone());
        let written = match self.fencing_token {
            Some(token) => state.put_fenced(&self.hint_key, &doc, token),
            None => state.put(&self.hint_key, &doc),
        };
        match written {
            Ok(()) => {
                self.hint_stale = false;
                Ok(())
            }
            // A newer lease holder wrote positions since: this writer is stale.
            Err(e @ StateError::Fenced { .. }) => Err(e.into()),
            // The previous hint stays: still a consistent (position, values) pair.
            Err(e) => {
                tracing::warn!(error = %e, "offsets position hint not written; the next load reads more of the topic");
                Ok(())
            }
        }
    }
}

/// Our keys are JSON text, so UTF-8; the hint keeps them as strings.
fn key_string(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// Which offsets-topic records of our keys a [`OffsetStore::replay`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Only those on the partition the key hashes to over today's partition count.
    Placement,
    /// Those on any partition, as Java's `KafkaOffsetBackingStore` reads them.
    AllPartitions,
}

/// The last record of one of our keys on one offsets-topic partition.
#[derive(Debug)]
struct Seen {
    offset: i64,
    timestamp: Option<i64>,
    value: Option<Vec<u8>>,
    fence: Option<u64>,
}

/// The partition holding a key's latest write. Writers place a key by the partition count they
/// see, so once the topic has gained partitions its newer records are on today's placement;
/// records elsewhere were written before, and among those the latest timestamp wins.
fn latest_write(by_partition: &BTreeMap<i32, Seen>, placement: i32) -> (i32, &Seen) {
    if let Some(s) = by_partition.get(&placement) {
        return (placement, s);
    }
    by_partition
        .iter()
        .max_by_key(|(p, s)| (s.timestamp, **p))
        .map(|(p, s)| (*p, s))
        .expect("a key is only recorded with a record")
}

/// A stored value in the hint: the offset alone (a number, as hints before topic IDs were kept),
/// or the Connect value's own map `{"offset":41,"topicId":"…","fence":7}`.
fn hint_json(v: &StoredOffset) -> Value {
    match v.topic_id.is_none() && v.fence.is_none() {
        true => json!(v.offset),
        false => stored_offset_json(v),
    }
}

/// Reads what [`hint_json`] writes; `None` for anything else (the hint is then unusable).
fn hint_value(v: &Value) -> Option<Option<StoredOffset>> {
    match v {
        Value::Null => Some(None),
        Value::Number(n) => Some(Some(StoredOffset::plain(n.as_i64()?))),
        Value::Object(m) => {
            let topic_id = match m.get("topicId") {
                None => None,
                Some(id) => Some(id.as_str()?.to_string()),
            };
            let fence = match m.get("fence") {
                None => None,
                Some(f) => Some(f.as_u64()?),
            };
            let offset = m.get("offset")?.as_i64()?;
            Some(Some(StoredOffset {
                offset,
                topic_id,
                fence,
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LocalStateStore;

    fn store(state: Arc<dyn StateStore>) -> OffsetStore {
        OffsetStore::new(
            "mm2-offsets.A.internal",
            25,
            Props::new(),
            Props::new(),
            state,
            "A->B/MirrorSourceConnector/0/offsets-hint",
        )
    }

    fn hint_doc(positions: Value, values: Value) -> Value {
        json!({
            "version": 1, "topic": "mm2-offsets.A.internal", "partition_count": 25,
            "connector": "MirrorSourceConnector", "positions": positions, "values": values,
        })
    }

    /// The hint `s` saved, parsed back.
    fn saved_hint(s: &OffsetStore) -> Hint {
        let doc = s.state.get(&s.hint_key).unwrap().expect("a saved hint");
        s.parse_hint(&doc).unwrap()
    }

    /// A state store whose writes all fail: as a stalled table (`fenced: false`) or as a
    /// successor's newer fencing token (`fenced: true`).
    struct Refusing {
        fenced: bool,
    }

    impl StateStore for Refusing {
        fn get(&self, _: &str) -> Result<Option<Value>, StateError> {
            Ok(None)
        }
        fn put(&self, key: &str, _: &Value) -> Result<(), StateError> {
            Err(StateError::Backend {
                key: key.into(),
                message: "no answer before the slice's deadline".into(),
            })
        }
        fn put_fenced(&self, key: &str, value: &Value, token: u64) -> Result<(), StateError> {
            match self.fenced {
                true => Err(StateError::Fenced {
                    key: key.into(),
                    token,
                }),
                false => self.put(key, value),
            }
        }
    }

    // A hint is an optimisation: one not written (a stalled table) leaves the previous, still
    // consistent one, so the commit it follows stands. A fenced write means a newer lease
    // holder exists: that is the writer's error.
    #[test]
    fn only_a_fenced_hint_write_fails_the_commit() {
        let mut stalled = store(Arc::new(Refusing { fenced: false })).fenced_by(3);
        assert!(stalled.save_hint().is_ok());
        let mut stale = store(Arc::new(Refusing { fenced: true })).fenced_by(3);
        assert!(matches!(
            stale.save_hint(),
            Err(OffsetStoreError::State(StateError::Fenced { token: 3, .. }))
        ));
    }

    // §4.7: keys land on murmur2 % partitions; the spec's example is partition 4 of 25.
    #[test]
    fn placement_uses_murmur2_over_the_actual_partition_count() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(Arc::new(LocalStateStore::new(dir.path())));
        let (key, p) = s.placement(&PartitionKey::source("A", "t1", 0).0);
        assert_eq!(
            key,
            br#"["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t1"}]"#.to_vec()
        );
        assert_eq!(p, 4);
        let s = s.with_connector("other");
        let (key, _) = s.placement(&PartitionKey::source("A", "t1", 0).0);
        assert!(key.starts_with(br#"["other","#));
    }

    #[test]
    fn hints_for_another_topic_count_or_connector_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(Arc::new(LocalStateStore::new(dir.path())));
        let good = hint_doc(json!({"4": 10}), json!({"k": 41, "j": null}));
        let h = s.parse_hint(&good).unwrap();
        assert_eq!(h.positions, BTreeMap::from([(4, 10)]));
        assert_eq!(h.values["k"], Some(StoredOffset::plain(41)));
        assert_eq!(h.values["j"], None);

        let mut other_count = good.clone();
        other_count["partition_count"] = json!(50);
        assert!(s
            .parse_hint(&other_count)
            .unwrap_err()
            .contains("50 partitions"));
        let mut other_topic = good.clone();
        other_topic["topic"] = json!("x");
        assert!(s.parse_hint(&other_topic).unwrap_err().contains("topic x"));
        let mut other_connector = good.clone();
        other_connector["connector"] = json!("c");
        assert!(s.parse_hint(&other_connector).is_err());
        let mut out_of_range = good.clone();
        out_of_range["positions"] = json!({"25": 1});
        assert!(s.parse_hint(&out_of_range).is_err());
        let mut negative = good;
        negative["positions"] = json!({"3": -1});
        assert!(s.parse_hint(&negative).is_err());
        assert!(s.parse_hint(&json!([1])).is_err());
    }

    // The hint keeps each value's fence, so a load from it skips a stale writer's late record
    // as a full read does; a fence that is not a non-negative integer makes the hint unusable.
    #[test]
    fn hint_values_keep_the_fence() {
        let fenced = StoredOffset {
            fence: Some(7),
            ..StoredOffset::plain(41)
        };
        assert_eq!(hint_json(&fenced), json!({"offset": 41, "fence": 7}));
        assert_eq!(hint_value(&hint_json(&fenced)), Some(Some(fenced)));
        assert_eq!(hint_json(&StoredOffset::plain(41)), json!(41));
        assert_eq!(hint_value(&json!({"offset": 41, "fence": -1})), None);
        assert_eq!(hint_value(&json!({"offset": 41, "fence": "7"})), None);
    }

    #[test]
    fn saved_hint_round_trips_through_the_parser() {
        let dir = tempfile::tempdir().unwrap();
        let state: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(dir.path()));
        let mut s = store(state.clone());
        let a = PartitionKey::source("A", "t1", 0);
        let b = PartitionKey::source("A", "t1", 1);
        s.track(&a);
        s.track(&b);
        let pa = s.tracked[&a].log_partition;
        let pb = s.tracked[&b].log_partition;
        let with_id = StoredOffset {
            offset: 41,
            topic_id: Some("kq4tPfR3QW2VpsBzxc6rmA".into()),
            fence: Some(7),
        };
        s.values.insert(a.clone(), Some(with_id.clone()));
        s.values.insert(b.clone(), None);
        s.positions.insert(pa, 7);
        s.positions.insert(pb, 9);
        s.save_hint().unwrap();
        let h = saved_hint(&s);
        assert_eq!(h.positions[&pa], if pa == pb { 9 } else { 7 });
        assert_eq!(h.values[&key_string(&s.tracked[&a].key)], Some(with_id));
        assert_eq!(h.values[&key_string(&s.tracked[&b].key)], None);
    }

    fn seen(offset: i64, timestamp: i64) -> Seen {
        Seen {
            offset,
            timestamp: Some(timestamp),
            value: None,
            fence: None,
        }
    }

    // After the topic gains partitions, writers use the key's new partition: its record is the
    // newest whatever the clocks say; among older partitions the latest timestamp wins.
    #[test]
    fn latest_write_prefers_the_placement_then_the_latest_timestamp() {
        let by_partition = BTreeMap::from([(3, seen(10, 500)), (7, seen(2, 100))]);
        assert_eq!(latest_write(&by_partition, 7).0, 7);
        assert_eq!(latest_write(&by_partition, 9).0, 3);
        let by_partition = BTreeMap::from([(3, seen(10, 100)), (5, seen(2, 900))]);
        let (p, s) = latest_write(&by_partition, 9);
        assert_eq!((p, s.offset), (5, 2));
    }

    #[test]
    fn placed_round_trips_and_decides_whether_uncovered_keys_need_a_full_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(Arc::new(LocalStateStore::new(dir.path())));
        let a = PartitionKey::source("A", "t1", 0);
        s.track(&a);
        let pa = s.tracked[&a].log_partition;
        s.values.insert(a.clone(), Some(StoredOffset::plain(41)));
        s.positions.insert(pa, 7);
        s.save_hint().unwrap();
        assert_eq!(saved_hint(&s).placed, None, "not recorded: unknown");
        s.placed = Some(true);
        s.save_hint().unwrap();
        let hint = saved_hint(&s);
        assert_eq!(hint.placed, Some(true));

        // A second key on another partition, unknown to the hint.
        let b = (1..100)
            .map(|p| PartitionKey::source("A", "t1", p))
            .find(|k| s.placement(&k.0).1 != pa)
            .unwrap();
        s.track(&b);
        let needed: BTreeSet<i32> = s.tracked.values().map(|t| t.log_partition).collect();
        assert_eq!(
            s.hinted_partitions(&needed, &hint).unwrap(),
            BTreeMap::from([(pa, 7)])
        );
        let unplaced = Hint {
            placed: Some(false),
            ..saved_hint(&s)
        };
        let reason = s.hinted_partitions(&needed, &unplaced).unwrap_err();
        assert!(reason.contains("covers 1 of our 2 partitions"), "{reason}");
    }

    /// A state store whose every document is corrupt, or unreachable.
    struct Unreadable {
        corrupt: bool,
    }

    impl StateStore for Unreadable {
        fn get(&self, key: &str) -> Result<Option<Value>, StateError> {
            Err(match self.corrupt {
                true => StateError::Corrupt {
                    key: key.into(),
                    source: serde_json::from_str::<Value>("{\"positions\":").unwrap_err(),
                },
                false => StateError::Backend {
                    key: key.into(),
                    message: "table unreachable".into(),
                },
            })
        }
        fn put(&self, _: &str, _: &Value) -> Result<(), StateError> {
            Ok(())
        }
    }

    // A corrupt hint is a lost shortcut (read everything instead); a store that cannot answer
    // is an error, since the hint could not be saved either.
    #[test]
    fn a_corrupt_hint_is_ignored_but_an_unreachable_store_fails() {
        let s = store(Arc::new(Unreadable { corrupt: true }));
        let reason = s.read_hint().unwrap().unwrap_err();
        assert!(reason.contains("offsets-hint"), "{reason}");
        let s = store(Arc::new(Unreadable { corrupt: false }));
        assert!(matches!(
            s.read_hint(),
            Err(OffsetStoreError::State(StateError::Backend { .. }))
        ));
    }

    #[test]
    fn partition_keys_order_and_hash_by_fields() {
        use std::collections::HashSet;
        let a = PartitionKey::source("A", "t", 1);
        let b = PartitionKey::source("A", "t", 2);
        assert!(a < b);
        let hb = PartitionKey(SourcePartition::Heartbeat {
            source_cluster_alias: "A".into(),
            target_cluster_alias: "B".into(),
        });
        assert!(b < hb);
        let set: HashSet<PartitionKey> = [a.clone(), a.clone(), b].into_iter().collect();
        assert_eq!(set.len(), 2);
    }
}
