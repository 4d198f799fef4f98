//! `OffsetSyncStore`: remembers offset syncs and translates upstream offsets (mm2-compat §8.3).
//!
//! **Why 64 slots.** The offset-syncs topic can hold millions of syncs per partition, but a
//! consumer group is usually near the live end. Java 3.5+ (KAFKA-14666, KAFKA-15202,
//! KAFKA-15905) keeps, per source topic-partition, 64 references to received syncs, spaced
//! roughly exponentially backwards from the newest: fine precision near the end, coarse
//! precision far back, constant memory and a linear-time update. The invariants:
//!
//! * A: `S[0]` is the newest sync received;
//! * B: for `i < j` with distinct entries, `S[i].up ≤ S[j].up + 2^j − 2^i` (not too far apart);
//! * C: for `i < j` with distinct entries, `S[i].up ≥ S[j].up + 2^max(i−2,0)` (not too close);
//! * D: `S[63]` is the oldest sync still usable.
//!
//! **Why identity matters.** Slots repeat: the same received sync can fill several slots. The
//! update algorithm decides "same entry" by *which record* fills a slot, not by equal values:
//! two received syncs with equal offsets (a duplicate sync, as Java's own test feeds at 1000) are
//! distinct entries. We give every received sync a sequence id and compare ids, which is exactly
//! Java's reference comparison (`==`) and keeps the expiry decisions, and so the translations,
//! identical to Java's.
//!
//! **Why must-read-to-end exists.** While the initial read of the topic is in progress, syncs
//! that an earlier incarnation of the task may already have used for checkpoints go by. If the
//! checkpoints of that incarnation could not be loaded (§8.4), we cannot tell which translations
//! were already emitted; translating with older syncs than the last one of the initial read
//! could then produce a checkpoint *behind* one already written. So in that mode each sync of
//! the initial read overwrites the whole array, and only the last sync of the initial read
//! survives. When the checkpoints loaded fine, the monotonic filter (§8.5) protects us and the
//! full history is kept (`initialization_must_read_to_end = false`).
//!
//! **Why translation is conservative.** An exact hit gives the mapped offset; anything past a sync
//! gives one past that sync's downstream offset, never an extrapolation (which, before 3.5,
//! could skip records). A group behind the oldest usable sync gets −1 (no checkpoint).
//!
//! Bounds use wrapping 64-bit arithmetic exactly as Java's `long` does, so huge offsets behave
//! the same (`1 << 63` is `i64::MIN`).
//!
//! For the reader of the offset-syncs topic (not in this module): Java never skips a bad record
//! here; a malformed sync drops the rest of its consumer poll batch and a tombstone during the
//! initial read prevents the task from ever translating (§4.6, §13 #33).
//!
//! Checked against `apache/kafka` `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSyncStore.java`
//! and `OffsetSyncStoreTest.java` (3.8+ versions with `start(initializationMustReadToEnd)`).

use std::collections::HashMap;

use crate::wire::OffsetSync;

/// Slots per source topic-partition: one per bit of a 64-bit offset (Java `SYNCS_PER_PARTITION`).
pub const SYNCS_PER_PARTITION: usize = 64;

/// One received sync as stored in the slots.
///
/// `id` is the sync's receive sequence number in this store; two slots hold "the same" sync
/// exactly when their ids are equal (Java compares references).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredSync {
    /// Unique per received sync; identity for the update algorithm.
    pub id: u64,
    /// Source-cluster offset of the sync.
    pub upstream_offset: i64,
    /// Target-cluster offset the upstream record was written to.
    pub downstream_offset: i64,
}

type Slots = [StoredSync; SYNCS_PER_PARTITION];

/// Offset syncs per source topic-partition, and the translation of upstream offsets (§8.3).
///
/// Feed every record of the offset-syncs topic (partition 0, from the beginning) to
/// [`OffsetSyncStore::handle_record`], call [`OffsetSyncStore::finish_initial_read`] once the
/// initial read reached the end, then translate with [`OffsetSyncStore::translate_downstream`].
#[derive(Debug, Clone)]
pub struct OffsetSyncStore {
    initialization_must_read_to_end: bool,
    read_to_end: bool,
    next_id: u64,
    // topic → partition → slots; nested so lookups by `&str` need no allocation.
    syncs: HashMap<String, HashMap<i32, Slots>>,
}

impl OffsetSyncStore {
    /// A store before its initial read. `initialization_must_read_to_end` is Java's
    /// `start(!checkpointsReadOk)`: true when the checkpoint store failed to load, so that only
    /// the last sync of the initial read is kept.
    pub fn new(initialization_must_read_to_end: bool) -> Self {
        OffsetSyncStore {
            initialization_must_read_to_end,
            read_to_end: false,
            next_id: 0,
            syncs: HashMap::new(),
        }
    }

    /// Whether only the last sync of the initial read is kept.
    pub fn initialization_must_read_to_end(&self) -> bool {
        self.initialization_must_read_to_end
    }

    /// Marks the initial read-to-end as done (Java sets `readToEnd` when `start()` returns).
    /// Translation is refused until then (§12.6 #58).
    pub fn finish_initial_read(&mut self) {
        self.read_to_end = true;
    }

    /// Whether [`OffsetSyncStore::finish_initial_read`] was called.
    pub fn is_read_to_end(&self) -> bool {
        self.read_to_end
    }

    /// Applies one received sync (Java `handleRecord`): fills a new partition's array, clears it
    /// on an upstream rewind or during a must-read-to-end initial read, and otherwise runs the
    /// replacement scan that keeps invariants A–D.
    pub fn handle_record(&mut self, sync: OffsetSync) {
        let stored = StoredSync {
            id: self.next_id,
            upstream_offset: sync.upstream_offset,
            downstream_offset: sync.downstream_offset,
        };
        self.next_id += 1;
        let only_load_last_offset = !self.read_to_end && self.initialization_must_read_to_end;
        let partitions = self.syncs.entry(sync.topic).or_default();
        match partitions.get_mut(&sync.partition) {
            None => {
                partitions.insert(sync.partition, [stored; SYNCS_PER_PARTITION]);
            }
            Some(slots) => update_sync_array(slots, stored, only_load_last_offset),
        }
    }

    /// Translates a committed upstream offset of `topic_partition` (a **source** topic) into a
    /// downstream offset (Java `translateDownstream`).
    ///
    /// * `None` ("empty"): the initial read is not finished, or there is no sync for the
    ///   partition. No checkpoint must be written.
    /// * `Some(-1)`: the group is behind the oldest usable sync.
    /// * otherwise the sync's downstream offset on an exact hit, or one past it.
    ///
    /// `group` is only used in log lines.
    pub fn translate_downstream(
        &self,
        group: &str,
        topic_partition: (&str, i32),
        upstream_offset: i64,
    ) -> Option<i64> {
        let (topic, partition) = topic_partition;
        if !self.read_to_end {
            tracing::debug!(
                group,
                topic,
                partition,
                upstream_offset,
                "translateDownstream skipped: initial offset syncs read still in progress"
            );
            return None;
        }
        let Some(slots) = self.slots(topic, partition) else {
            tracing::debug!(
                group,
                topic,
                partition,
                upstream_offset,
                "translateDownstream skipped: offset sync not found"
            );
            return None;
        };
        // Newest to oldest: the first sync at or before the offset is the most precise one.
        let sync = slots
            .iter()
            .find(|s| s.upstream_offset <= upstream_offset)
            .unwrap_or(&slots[SYNCS_PER_PARTITION - 1]);
        if sync.upstream_offset > upstream_offset {
            // Too far in the past to translate accurately.
            return Some(-1);
        }
        // Past a sync we only know that later records land after the sync's downstream offset;
        // guessing further could skip records.
        let step = if upstream_offset == sync.upstream_offset {
            0
        } else {
            1
        };
        Some(sync.downstream_offset + step)
    }

    /// The sync in slot `index` (0 = newest) for a source partition, if the partition has syncs
    /// and `index < 64` (Java's test hook `syncFor`). Useful for diagnostics.
    pub fn sync_for(&self, topic: &str, partition: i32, index: usize) -> Option<StoredSync> {
        self.slots(topic, partition)
            .and_then(|slots| slots.get(index))
            .copied()
    }

    /// The distinct syncs of a partition, newest first (adjacent repeats elided, as Java's trace
    /// log prints them).
    pub fn distinct_syncs(&self, topic: &str, partition: i32) -> Vec<StoredSync> {
        let mut out: Vec<StoredSync> = Vec::new();
        if let Some(slots) = self.slots(topic, partition) {
            for s in slots {
                if out.last().map(|l| l.id) != Some(s.id) {
                    out.push(*s);
                }
            }
        }
        out
    }

    fn slots(&self, topic: &str, partition: i32) -> Option<&Slots> {
        self.syncs.get(topic).and_then(|p| p.get(&partition))
    }
}

/// Java `updateSyncArray`, on a partition that already has an array.
fn update_sync_array(syncs: &mut Slots, sync: StoredSync, only_load_last_offset: bool) {
    let upstream_rewind = sync.upstream_offset < syncs[0].upstream_offset;
    if only_load_last_offset || upstream_rewind {
        // All slots equal satisfies B and C trivially.
        *syncs = [sync; SYNCS_PER_PARTITION];
        return;
    }
    let original = *syncs;
    let mut replacement = sync;
    // Index into `original` of the next old value we may promote.
    let mut r = 0usize;
    // Invariant A: the newest sync always goes first.
    syncs[0] = sync;
    for cur in 1..SYNCS_PER_PARTITION {
        let prev = cur - 1;
        // Try to keep an old value rather than the new sync: more distinct syncs survive.
        loop {
            let old = original[r];
            // Recent enough for this slot (it may still fit a later, older slot otherwise).
            let recent = inv_b(&syncs[prev], &old, prev, cur);
            // Far enough from the previous slot; if not, it never will be at a later slot.
            let sep_prev = inv_c(&syncs[prev], &old, prev);
            // Far enough from the next slot, which we prefer to keep.
            let next = cur + 1;
            let sep_next = next >= SYNCS_PER_PARTITION || inv_c(&old, &syncs[next], cur);
            // A repeated old value needs to be considered only once.
            let dup = r + 1 < SYNCS_PER_PARTITION && old.id == original[r + 1].id;
            let promote = recent && sep_prev && sep_next;
            if promote {
                replacement = old;
            }
            let skip = dup || !sep_prev;
            if promote || skip {
                r += 1;
            }
            if !(r < cur && skip) {
                break;
            }
        }
        debug_assert!(inv_b(&syncs[prev], &replacement, prev, cur));
        debug_assert!(inv_c(&syncs[prev], &replacement, prev));
        if inv_b(&syncs[prev], &syncs[cur], prev, cur) {
            // B holds here, so it holds for the whole tail: keep it.
            break;
        }
        syncs[cur] = replacement;
    }
}

/// Invariant B for slots `i < j`: `a` is `b`, or `a.up ≤ b.up + 2^j − 2^i` (skipped when the
/// wrapping bound is negative).
fn inv_b(a: &StoredSync, b: &StoredSync, i: usize, j: usize) -> bool {
    let bound = b
        .upstream_offset
        .wrapping_add(1i64.wrapping_shl(j as u32))
        .wrapping_sub(1i64.wrapping_shl(i as u32));
    a.id == b.id || bound < 0 || a.upstream_offset <= bound
}

/// Invariant C for slot `i` against a later slot: `a` is `b`, or `a.up ≥ b.up + 2^max(i−2,0)`
/// with a non-negative wrapping bound.
fn inv_c(a: &StoredSync, b: &StoredSync, i: usize) -> bool {
    let bound = b
        .upstream_offset
        .wrapping_add(1i64.wrapping_shl(i.saturating_sub(2) as u32));
    a.id == b.id || (bound >= 0 && a.upstream_offset >= bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPIC: &str = "topic1";
    const PARTITION: i32 = 2;

    fn sync(store: &mut OffsetSyncStore, up: i64, down: i64) {
        sync_tp(store, TOPIC, PARTITION, up, down);
    }

    fn sync_tp(store: &mut OffsetSyncStore, topic: &str, partition: i32, up: i64, down: i64) {
        store.handle_record(OffsetSync {
            topic: topic.into(),
            partition,
            upstream_offset: up,
            downstream_offset: down,
        });
    }

    fn translate(store: &OffsetSyncStore, up: i64) -> Option<i64> {
        store.translate_downstream("g", (TOPIC, PARTITION), up)
    }

    fn slot(store: &OffsetSyncStore, i: usize) -> StoredSync {
        store.sync_for(TOPIC, PARTITION, i).unwrap()
    }

    /// Java `assertSparseSync`: p−1 → previous+1 (or −1), p → p, p+1 → p+1, p+2 → p+1.
    fn assert_sparse_sync(store: &OffsetSyncStore, sync_offset: i64, previous: i64) {
        let before = if previous == -1 { -1 } else { previous + 1 };
        assert_eq!(
            translate(store, sync_offset - 1),
            Some(before),
            "{sync_offset}-1"
        );
        assert_eq!(
            translate(store, sync_offset),
            Some(sync_offset),
            "{sync_offset}"
        );
        assert_eq!(
            translate(store, sync_offset + 1),
            Some(sync_offset + 1),
            "{sync_offset}+1"
        );
        assert_eq!(
            translate(store, sync_offset + 2),
            Some(sync_offset + 1),
            "{sync_offset}+2"
        );
    }

    /// Java `assertSparseSyncInvariant`: B and C for every pair of distinct values.
    fn assert_sparse_sync_invariant(store: &OffsetSyncStore) {
        let slots = store.slots(TOPIC, PARTITION).unwrap();
        for j in 0..SYNCS_PER_PARTITION {
            for i in 0..j {
                let ju = slots[j].upstream_offset;
                let iu = slots[i].upstream_offset;
                if ju == iu {
                    continue;
                }
                let lower = ju.wrapping_add(1i64 << i.saturating_sub(2));
                if lower < 0 {
                    continue;
                }
                assert!(iu >= lower, "Invariant C({i},{j}): {iu} < {lower}");
                let upper = ju
                    .wrapping_add(1i64.wrapping_shl(j as u32))
                    .wrapping_sub(1i64 << i);
                if upper < 0 {
                    continue;
                }
                assert!(iu <= upper, "Invariant B({i},{j}): {iu} > {upper}");
            }
        }
    }

    /// Java `countDistinctStoredSyncs`: adjacent slots compared by identity.
    fn count_distinct(store: &OffsetSyncStore) -> usize {
        let slots = store.slots(TOPIC, PARTITION).unwrap();
        1 + slots.windows(2).filter(|w| w[0].id != w[1].id).count()
    }

    // §12.6 #57, §8.3 "Simple sequence" (Java testOffsetTranslation).
    #[test]
    fn simple_sequence() {
        let mut store = OffsetSyncStore::new(true);
        store.finish_initial_read();

        // No dead-reckoning: 150 is past 100→200, so one past 200.
        sync(&mut store, 100, 200);
        assert_eq!(translate(&store, 150), Some(201));

        sync(&mut store, 150, 251);
        assert_eq!(translate(&store, 150), Some(251));
        // Before any sync.
        assert_eq!(translate(&store, 5), Some(-1));

        // Downstream reset.
        sync(&mut store, 200, 10);
        assert_eq!(translate(&store, 200), Some(10));

        // Upstream rewind.
        sync(&mut store, 20, 20);
        assert_eq!(translate(&store, 20), Some(20));
    }

    // §12.6 #58: nothing translates before the initial read finished, even syncs already read.
    #[test]
    fn no_translation_before_initial_read_finished() {
        let mut store = OffsetSyncStore::new(true);
        for up in [0, 100, 200] {
            assert_eq!(translate(&store, up), None);
        }
        sync(&mut store, 100, 200);
        for up in [0, 100, 200] {
            assert_eq!(translate(&store, up), None);
        }
        assert!(!store.is_read_to_end());
        store.finish_initial_read();
        assert!(store.is_read_to_end());
        assert_eq!(translate(&store, 0), Some(-1));
        assert_eq!(translate(&store, 100), Some(200));
        assert_eq!(translate(&store, 200), Some(201));
    }

    // §12.6 #59: no sync for the partition ⇒ empty, even for another partition of the topic.
    #[test]
    fn no_translation_without_sync() {
        let mut store = OffsetSyncStore::new(true);
        store.finish_initial_read();
        assert_eq!(translate(&store, 0), None);
        sync_tp(&mut store, TOPIC, PARTITION + 1, 0, 0);
        assert_eq!(translate(&store, 0), None);
        sync_tp(&mut store, "other", PARTITION, 0, 0);
        assert_eq!(translate(&store, 0), None);
        assert_eq!(
            store.translate_downstream("g", (TOPIC, PARTITION + 1), 0),
            Some(0)
        );
    }

    // §12.6 #57, §8.3 must-read-to-end on (Java testPastOffsetTranslation): syncs up=down every 10
    // from 0 to 1000 during the initial read, then 1010…10000 live.
    #[test]
    fn past_offset_translation_must_read_to_end() {
        let mut store = OffsetSyncStore::new(true);
        let mut offset = 0;
        while offset <= 1000 {
            sync(&mut store, offset, offset);
            assert_sparse_sync_invariant(&store);
            offset += 10;
        }
        store.finish_initial_read();

        // Only the last sync of the initial read is usable.
        assert_sparse_sync(&store, 1000, -1);
        assert_eq!(store.distinct_syncs(TOPIC, PARTITION).len(), 1);

        while offset <= 10000 {
            sync(&mut store, offset, offset);
            assert_sparse_sync_invariant(&store);
            offset += 10;
        }

        // Invariant D: the last sync of the initial read is still the oldest one.
        assert_sparse_sync(&store, 1000, -1);
        // Older offsets translate less precisely.
        for (point, previous) in [
            (4840, 1000),
            (6760, 4840),
            (8680, 6760),
            (9160, 8680),
            (9640, 9160),
            (9880, 9640),
            (9940, 9880),
            (9970, 9940),
            (9990, 9970),
            (10000, 9990),
        ] {
            assert_sparse_sync(&store, point, previous);
        }

        // An upstream rewind clears all history.
        sync(&mut store, 1500, 11000);
        assert_sparse_sync_invariant(&store);
        assert_eq!(translate(&store, 1499), Some(-1));
        assert_eq!(translate(&store, 1500), Some(11000));
        assert_eq!(translate(&store, 2000), Some(11001));
    }

    // §12.6 #57, §8.3 must-read-to-end off (Java testPastOffsetTranslationWithoutInitializationReadToEnd).
    // Java's live loop starts again at 1000 (a duplicate of the last initial sync), not at 1010.
    #[test]
    fn past_offset_translation_keeping_initial_history() {
        let mut store = OffsetSyncStore::new(false);
        let mut offset = 0;
        while offset <= 1000 {
            sync(&mut store, offset, offset);
            assert_sparse_sync_invariant(&store);
            offset += 10;
        }
        store.finish_initial_read();

        assert_sparse_sync(&store, 480, 0);
        assert_sparse_sync(&store, 720, 480);
        assert_sparse_sync(&store, 1000, 990);

        let mut offset = 1000;
        while offset <= 10000 {
            sync(&mut store, offset, offset);
            assert_sparse_sync_invariant(&store);
            offset += 10;
        }

        // 1000 was expired; before 3840 only sync 0 remains.
        for (point, previous) in [
            (3840, 0),
            (7680, 3840),
            (8640, 7680),
            (9120, 8640),
            (9600, 9120),
            (9840, 9600),
            (9900, 9840),
            (9960, 9900),
            (9990, 9960),
            (10000, 9990),
        ] {
            assert_sparse_sync(&store, point, previous);
        }

        sync(&mut store, 1500, 11000);
        assert_sparse_sync_invariant(&store);
        assert_eq!(translate(&store, 1499), Some(-1));
        assert_eq!(translate(&store, 1500), Some(11000));
        assert_eq!(translate(&store, 2000), Some(11001));
    }

    /// Java `assertSyncSpacingHasBoundedExpirations`: after each sync, A and D hold and at most
    /// `max_expirations` distinct syncs left the store.
    fn assert_bounded_expirations(
        first_offset: i64,
        steps: impl IntoIterator<Item = i64>,
        max_expirations: usize,
    ) {
        let mut store = OffsetSyncStore::new(true);
        store.finish_initial_read();
        sync(&mut store, first_offset, first_offset);
        let mut offset = first_offset;
        let mut last_count = 1usize;
        for step in steps {
            offset = offset
                .checked_add(step)
                .expect("test is invalid: offset overflowed");
            sync(&mut store, offset, offset);
            // Invariant A: the latest sync is present.
            assert_eq!(slot(&store, 0).upstream_offset, offset);
            // Invariant D: the earliest sync is kept.
            assert_eq!(slot(&store, 63).upstream_offset, first_offset);
            let count = count_distinct(&store);
            // One sync was added: an unchanged count means exactly one expired.
            let expired = (last_count + 1).saturating_sub(count);
            assert!(
                expired <= max_expirations,
                "store expired {expired} > {max_expirations} syncs after offset {offset}"
            );
            last_count = count;
        }
    }

    /// A small deterministic PRNG (xorshift64*) so the churn tests need no dependency.
    struct XorShift(u64);

    impl XorShift {
        fn next_u64(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.0 = x;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        /// Uniform in `[lo, lo + 2^bits)`.
        fn in_pow2_range(&mut self, lo: i64, bits: u32) -> i64 {
            lo + (self.next_u64() >> (64 - bits)) as i64
        }
    }

    // §8.3 bounded churn: evenly spaced syncs expire at most 1 distinct sync each
    // (Java testConsistentlySpacedSyncs).
    #[test]
    fn consistently_spaced_syncs_expire_at_most_one() {
        let iterations = 100usize;
        let max_step = i64::MAX / iterations as i64;
        let mut step: i64 = 1;
        while step < max_step {
            for first in 0..30 {
                assert_bounded_expirations(first, std::iter::repeat_n(step, iterations), 1);
            }
            step = step * 2 + 1;
        }
    }

    // §8.3 bounded churn: random gaps of at most 2^n expire at most n+2, also with a large
    // minimum gap (Java testRandomlySpacedSyncs, with xorshift instead of java.util.Random).
    #[test]
    fn randomly_spaced_syncs_expire_at_most_n_plus_2() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let iteration_bits = 10u32;
        let iterations = 1usize << iteration_bits;
        for n in 1..(64 - iteration_bits) {
            let gaps: Vec<i64> = (0..iterations).map(|_| rng.in_pow2_range(0, n)).collect();
            assert_bounded_expirations(0, gaps, n as usize + 2);
            let offset_lag_max = 1i64 << 16;
            let gaps: Vec<i64> = (0..iterations)
                .map(|_| rng.in_pow2_range(offset_lag_max, n))
                .collect();
            assert_bounded_expirations(0, gaps, n as usize + 2);
        }
    }

    // §8.3 bounded churn: gaps of 100 or 200 ("dropped sync") expire at most 2
    // (Java testDroppedSyncsSpacing).
    #[test]
    fn dropped_syncs_expire_at_most_two() {
        let mut rng = XorShift(42);
        let gaps: Vec<i64> = (0..10_000)
            .map(|_| if rng.next_u64() & 1 == 0 { 200 } else { 100 })
            .collect();
        assert_bounded_expirations(0, gaps, 2);
    }

    // §8.3: the bound checks must fail for a store that expires too much; guard the harness
    // itself so the churn tests above can fail.
    #[test]
    #[should_panic(expected = "store expired")]
    fn churn_harness_detects_excess_expirations() {
        // A zero bound is violated as soon as the array fills up.
        assert_bounded_expirations(0, std::iter::repeat_n(1, 200), 0);
    }

    // §8.3 identity: two received syncs with equal values are distinct entries.
    #[test]
    fn equal_values_are_distinct_entries() {
        let mut store = OffsetSyncStore::new(false);
        store.finish_initial_read();
        sync(&mut store, 10, 10);
        let first = slot(&store, 63).id;
        sync(&mut store, 10, 10);
        assert_ne!(slot(&store, 0).id, first);
        assert_eq!(slot(&store, 63).id, first);
        assert_eq!(store.distinct_syncs(TOPIC, PARTITION).len(), 2);
    }

    // §8.3: bounds use wrapping arithmetic near i64::MAX instead of panicking.
    #[test]
    fn huge_offsets_do_not_overflow() {
        let mut store = OffsetSyncStore::new(false);
        store.finish_initial_read();
        sync(&mut store, i64::MAX - 10, 100);
        sync(&mut store, i64::MAX - 1, 200);
        sync(&mut store, i64::MAX, 300);
        assert_sparse_sync_invariant(&store);
        assert_eq!(translate(&store, i64::MAX), Some(300));
        assert_eq!(translate(&store, i64::MAX - 1), Some(200));
        assert_eq!(translate(&store, i64::MAX - 5), Some(101));
        assert_eq!(translate(&store, 0), Some(-1));
    }

    #[test]
    fn sync_for_out_of_range_is_none() {
        let mut store = OffsetSyncStore::new(false);
        assert_eq!(store.sync_for(TOPIC, PARTITION, 0), None);
        sync(&mut store, 1, 1);
        assert!(store.sync_for(TOPIC, PARTITION, 63).is_some());
        assert_eq!(store.sync_for(TOPIC, PARTITION, 64), None);
    }
}
