//! Offset-sync emission (mm2-compat §7.5, `OffsetSyncWriter`).
//!
//! Offset syncs link an upstream offset to the downstream offset it was written at; the
//! checkpoint task translates consumer-group offsets with them. Emitting one per record would
//! flood the topic, so MM2 emits a sync only when translation would otherwise go wrong or stale:
//! the first record, a downstream lag of `offset.lag.max` since the last sync, an upstream gap
//! (compaction, transaction markers, a rewind) or a downstream regression. Every other update
//! is kept as *delayed* and promoted at each offset commit, so the latest pair of every
//! partition reaches the topic at least once per commit (KAFKA-15906).
//!
//! This module is pure bookkeeping: it decides *what* to send. The
//! [`OffsetSyncSender`](super::offset_sync_sender::OffsetSyncSender) owns the producer, sends
//! [`OffsetSyncWriter::take_pending`] after every acknowledged record and acknowledges sends
//! with [`OffsetSyncWriter::send_completed`], which enforces MM2's bound of in-flight sends.

use crate::wire::offset_sync::OffsetSync;
use std::collections::BTreeMap;

/// MM2's bound on offset-sync sends in flight (`MAX_OUTSTANDING_OFFSET_SYNCS`).
pub const MAX_OUTSTANDING_OFFSET_SYNCS: usize = 10;

/// Per-partition emission state (`PartitionState` in MM2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    previous_upstream: i64,
    previous_downstream: i64,
    last_sync_downstream: i64,
    should_sync: bool,
    max_offset_lag: i64,
    /// A sync of this partition was taken for sending (see `queue_pending`).
    sent_any: bool,
}

impl PartitionState {
    pub fn new(max_offset_lag: i64) -> Self {
        PartitionState {
            previous_upstream: -1,
            previous_downstream: -1,
            last_sync_downstream: -1,
            should_sync: false,
            max_offset_lag,
            sent_any: false,
        }
    }

    /// Record that `upstream` was written at `downstream`; true when a sync is due. The flag is
    /// sticky until [`reset`](Self::reset).
    pub fn update(&mut self, upstream: i64, downstream: i64) -> bool {
        let first = self.last_sync_downstream == -1;
        let too_stale = downstream - (self.last_sync_downstream + 1) >= self.max_offset_lag;
        let upstream_gap = upstream - self.previous_upstream != 1;
        let downstream_regressed = downstream < self.previous_downstream;
        if first || too_stale || upstream_gap || downstream_regressed {
            self.should_sync = true;
            self.last_sync_downstream = downstream;
        }
        self.previous_upstream = upstream;
        self.previous_downstream = downstream;
        self.should_sync
    }

    pub fn reset(&mut self) {
        self.should_sync = false;
    }

    pub fn last_sync_downstream(&self) -> i64 {
        self.last_sync_downstream
    }
}

/// A source partition's emission state and its delayed sync.
#[derive(Debug)]
struct Partition {
    state: PartitionState,
    /// The latest (upstream, downstream) pair not yet due as a sync; promoted at every commit.
    delayed: Option<(i64, i64)>,
}

/// Decides which offset syncs to send, per source partition (`OffsetSyncWriter` in MM2).
///
/// Called for every acknowledged record: a record that makes no sync due costs no allocation
/// (partitions are found by topic name, then number; a delayed sync is kept as its offsets).
#[derive(Debug)]
pub struct OffsetSyncWriter {
    max_offset_lag: i64,
    /// By topic, then partition: iterated in (topic, partition) order.
    partitions: BTreeMap<String, BTreeMap<i32, Partition>>,
    /// Syncs due now; insertion order is send order, latest per partition wins.
    pending: Vec<OffsetSync>,
    in_flight: usize,
    max_in_flight: usize,
}

impl OffsetSyncWriter {
    pub fn new(max_offset_lag: i64) -> Self {
        Self::with_max_in_flight(max_offset_lag, MAX_OUTSTANDING_OFFSET_SYNCS)
    }

    pub fn with_max_in_flight(max_offset_lag: i64, max_in_flight: usize) -> Self {
        OffsetSyncWriter {
            max_offset_lag,
            partitions: BTreeMap::new(),
            pending: Vec::new(),
            in_flight: 0,
            max_in_flight,
        }
    }

    /// Called for every acknowledged record (`maybeQueueOffsetSyncs`); true when a sync fell
    /// due, so the caller fires pending syncs (MM2 fires after every record either way).
    pub fn record_written(
        &mut self,
        topic: &str,
        partition: i32,
        upstream: i64,
        downstream: i64,
    ) -> bool {
        let p = self.partition_mut(topic, partition);
        if !p.state.update(upstream, downstream) {
            p.delayed = Some((upstream, downstream));
            return false;
        }
        p.state.reset();
        p.delayed = None;
        let keep_first = !p.state.sent_any;
        let sync = OffsetSync {
            topic: topic.to_string(),
            partition,
            upstream_offset: upstream,
            downstream_offset: downstream,
        };
        self.queue_pending(sync, keep_first);
        true
    }

    fn partition_mut(&mut self, topic: &str, partition: i32) -> &mut Partition {
        if !self.partitions.contains_key(topic) {
            self.partitions.insert(topic.to_string(), BTreeMap::new());
        }
        let max_lag = self.max_offset_lag;
        let topic = self.partitions.get_mut(topic).expect("inserted above");
        topic.entry(partition).or_insert_with(|| Partition {
            state: PartitionState::new(max_lag),
            delayed: None,
        })
    }

    /// `keep_first`: no sync of the partition has been taken for sending yet.
    fn queue_pending(&mut self, sync: OffsetSync, keep_first: bool) {
        // A map keyed by partition in MM2 (LinkedHashMap): the latest sync replaces an earlier
        // one in place, keeping the partition's original position in the send order.
        //
        // One deliberate difference: a partition's first sync is never replaced while it waits
        // for room in flight; the latest queues behind it instead (so at most two per
        // partition). The first sync is the oldest translation point a checkpoint store keeps:
        // replaced, every group behind the partition's next sync gets no checkpoint at all. A
        // slice hands over acknowledgements in bursts, so with many partitions this is common.
        let mut same = self
            .pending
            .iter()
            .enumerate()
            .filter(|(_, s)| s.topic == sync.topic && s.partition == sync.partition)
            .map(|(i, _)| i);
        match (same.next(), same.next()) {
            (None, _) => self.pending.push(sync),
            (Some(_), None) if keep_first => self.pending.push(sync),
            (Some(latest), None) | (Some(_), Some(latest)) => self.pending[latest] = sync,
        }
    }

    /// At every offset commit: every delayed sync becomes pending (`promoteDelayedOffsetSyncs`).
    pub fn promote_delayed(&mut self) {
        let mut due = Vec::new();
        for (topic, partitions) in &mut self.partitions {
            for (&partition, p) in partitions.iter_mut() {
                if let Some((upstream, downstream)) = p.delayed.take() {
                    let sync = OffsetSync {
                        topic: topic.clone(),
                        partition,
                        upstream_offset: upstream,
                        downstream_offset: downstream,
                    };
                    due.push((sync, !p.state.sent_any));
                }
            }
        }
        for (sync, keep_first) in due {
            self.queue_pending(sync, keep_first);
        }
    }

    /// The syncs to send now, limited by the in-flight bound (`firePendingOffsetSyncs`). Each
    /// returned sync counts as in flight until [`send_completed`](Self::send_completed).
    pub fn take_pending(&mut self) -> Vec<OffsetSync> {
        let room = self.max_in_flight.saturating_sub(self.in_flight);
        let n = room.min(self.pending.len());
        self.take(n)
    }

    /// Take every pending sync regardless of the in-flight bound: used at the end of a slice,
    /// when the task flushes its producer and waits for all of them anyway.
    pub fn take_all_pending(&mut self) -> Vec<OffsetSync> {
        self.take(self.pending.len())
    }

    fn take(&mut self, n: usize) -> Vec<OffsetSync> {
        self.in_flight += n;
        let taken: Vec<OffsetSync> = self.pending.drain(..n).collect();
        for sync in &taken {
            let partitions = self.partitions.get_mut(sync.topic.as_str());
            if let Some(p) = partitions.and_then(|ps| ps.get_mut(&sync.partition)) {
                p.state.sent_any = true;
            }
        }
        taken
    }

    /// A send finished (successfully or not: MM2 only logs failed syncs).
    pub fn send_completed(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Syncs sent and not yet reported delivered (or failed).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn pending(&self) -> &[OffsetSync] {
        &self.pending
    }

    pub fn has_delayed(&self) -> bool {
        let mut all = self.partitions.values().flat_map(BTreeMap::values);
        all.any(|p| p.delayed.is_some())
    }

    pub fn partition_state(&self, topic: &str, partition: i32) -> Option<&PartitionState> {
        Some(&self.partitions.get(topic)?.get(&partition)?.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // §7.5 worked example with offset.lag.max=50, and §12.5 #52.
    #[test]
    fn partition_state_worked_example() {
        let mut s = PartitionState::new(50);
        let cases = [
            ((0, 100), true),
            ((2, 102), true),
            ((3, 152), false),
            ((4, 153), true),
            ((5, 154), false),
            ((6, 203), false),
            ((7, 204), true),
            ((2, 206), true),
            ((3, 207), false),
            ((4, 3), true),
            ((5, 4), false),
        ];
        for ((up, down), expected) in cases {
            let got = s.update(up, down);
            assert_eq!(got, expected, "update({up}, {down})");
            if got {
                s.reset();
            }
        }
    }

    // §12.5 #52: the flag is sticky until reset.
    #[test]
    fn partition_state_flag_is_sticky() {
        let mut s = PartitionState::new(50);
        assert!(s.update(0, 100));
        s.reset();
        assert!(s.update(7, 6)); // gap and downstream regression
        assert!(s.update(7, 6));
        assert!(s.update(8, 7));
        assert!(s.update(10, 57));
        s.reset();
        assert!(!s.update(11, 58));
    }

    // §12.5 #53
    #[test]
    fn zero_lag_syncs_every_record() {
        let mut s = PartitionState::new(0);
        for i in 0..20 {
            assert!(s.update(i, i + 1000), "record {i}");
            s.reset();
        }
    }

    // §12.5 #54
    #[test]
    fn writer_pending_versus_delayed() {
        let mut w = OffsetSyncWriter::new(2);
        w.record_written("t", 0, 0, 1);
        assert_eq!(w.pending().len(), 1);
        assert_eq!(w.partition_state("t", 0).unwrap().last_sync_downstream(), 1);
        w.record_written("t", 0, 1, 2);
        assert_eq!(
            w.pending().len(),
            1,
            "second record is delayed, not pending"
        );
        assert!(w.has_delayed());
        assert_eq!(w.partition_state("t", 0).unwrap().last_sync_downstream(), 1);
    }

    // §12.5 #55: the in-flight bound holds back pending syncs.
    #[test]
    fn writer_respects_in_flight_bound() {
        let mut w = OffsetSyncWriter::with_max_in_flight(1, 1);
        w.record_written("t", 0, 0, 100);
        assert_eq!(w.take_pending().len(), 1);
        w.record_written("t", 0, 2, 102);
        assert!(w.take_pending().is_empty(), "first send still in flight");
        assert_eq!(w.pending().len(), 1);
        w.send_completed();
        let sent = w.take_pending();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].upstream_offset, 2);
        assert_eq!(sent[0].downstream_offset, 102);
    }

    // §12.5 #56
    #[test]
    fn promote_moves_latest_delayed_to_pending() {
        let mut w = OffsetSyncWriter::new(50);
        w.record_written("t", 0, 0, 100);
        let first = w.take_pending();
        assert_eq!(first.len(), 1);
        w.send_completed();
        w.record_written("t", 0, 1, 101);
        w.promote_delayed();
        assert!(!w.has_delayed());
        let pending = w.pending();
        assert_eq!(pending.len(), 1);
        assert_eq!(
            (pending[0].upstream_offset, pending[0].downstream_offset),
            (1, 101)
        );
    }

    #[test]
    fn latest_pending_per_partition_keeps_its_position() {
        let mut w = OffsetSyncWriter::new(0);
        // Both partitions have sent a sync, so their pending ones may be replaced.
        w.record_written("a", 0, 0, 0);
        w.record_written("b", 0, 0, 0);
        w.take_pending();
        w.send_completed();
        w.send_completed();
        w.record_written("a", 0, 1, 1);
        w.record_written("b", 0, 1, 1);
        w.record_written("a", 0, 2, 2);
        let order: Vec<(String, i64)> = w
            .pending()
            .iter()
            .map(|s| (s.topic.clone(), s.upstream_offset))
            .collect();
        assert_eq!(order, vec![("a".into(), 2), ("b".into(), 1)]);
    }

    // Issue #16: records acknowledged in one burst, with the pending syncs taken after every
    // record as MM2's `commitRecord` does. 3 partitions x 300 records at offset.lag.max=100
    // make 3 syncs per partition, all within the bound of 10 in flight: every one is sent,
    // none replaced. Taking pending only after the whole burst sends just the first and the last
    // per partition.
    #[test]
    fn syncs_taken_per_record_are_sent_not_replaced() {
        let mut w = OffsetSyncWriter::new(100);
        let mut sent: Vec<(i32, i64)> = Vec::new();
        for p in 0..3 {
            for up in 0..300 {
                if w.record_written("t", p, up, up) {
                    sent.extend(
                        w.take_pending()
                            .iter()
                            .map(|s| (s.partition, s.upstream_offset)),
                    );
                }
            }
        }
        for p in 0..3 {
            let ups: Vec<i64> = sent
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, u)| *u)
                .collect();
            assert_eq!(ups, vec![0, 101, 202], "partition {p}");
        }

        let mut batched = OffsetSyncWriter::new(100);
        for up in 0..300 {
            batched.record_written("t", 0, up, up);
        }
        let once: Vec<i64> = batched
            .take_pending()
            .iter()
            .map(|s| s.upstream_offset)
            .collect();
        assert_eq!(
            once,
            vec![0, 202],
            "one take per burst keeps only the first (never replaced) and the latest"
        );
    }

    // With the bound reached, later syncs wait one per partition and leave as sends complete.
    #[test]
    fn syncs_beyond_the_bound_wait_and_the_latest_per_partition_wins() {
        let mut w = OffsetSyncWriter::with_max_in_flight(0, 2);
        for up in 0..5 {
            w.record_written("t", 0, up, up);
            w.take_pending();
        }
        // 0 and 1 in flight; 2, 3, 4 replaced one another.
        assert_eq!(w.pending().len(), 1);
        assert_eq!(w.pending()[0].upstream_offset, 4);
        w.send_completed();
        let next = w.take_pending();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].upstream_offset, 4);
        assert!(w.take_pending().is_empty());
    }

    // A partition's first sync waiting for room is kept; later ones replace each other
    // behind it. MM2 would replace it, and groups behind the next sync would get no checkpoint.
    #[test]
    fn a_partitions_first_sync_is_never_replaced_while_waiting() {
        let mut w = OffsetSyncWriter::with_max_in_flight(0, 1);
        w.record_written("busy", 0, 0, 0);
        assert_eq!(w.take_pending().len(), 1, "the bound is now full");
        for up in 0..4 {
            w.record_written("t", 7, up, up);
            w.record_written("busy", 0, up + 1, up + 1);
        }
        let waiting: Vec<(&str, i64)> = w
            .pending()
            .iter()
            .map(|s| (s.topic.as_str(), s.upstream_offset))
            .collect();
        assert_eq!(waiting, vec![("t", 0), ("busy", 4), ("t", 3)]);
        w.send_completed();
        assert_eq!(
            w.take_pending()[0].upstream_offset,
            0,
            "the first goes first"
        );
        // Once one was taken, the partition is back to one pending sync, the latest.
        w.send_completed();
        w.take_pending();
        w.record_written("t", 7, 4, 4);
        w.record_written("t", 7, 5, 5);
        let t: Vec<i64> = w
            .pending()
            .iter()
            .filter(|s| s.topic == "t")
            .map(|s| s.upstream_offset)
            .collect();
        assert_eq!(t, vec![5]);
    }
}
