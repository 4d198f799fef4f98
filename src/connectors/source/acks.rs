//! Connect's `SubmittedRecords` for one task: every record handed to the producer is tracked
//! until its delivery report, and a partition's committable offset advances only over a
//! contiguous run of acknowledged records (mm2-compat §7.6), so a failed or outstanding record
//! is never committed past. The producer's delivery callback ([`CopyContext`]) feeds it.
//!
//! A slice's tasks share one data producer: each task registers its tracker with the
//! producer's context and tags every record with a [`RecordTag`] (its slot, the partition, a
//! sequence number), which the delivery callback uses to find the record again — no allocation
//! per record, and no search for it.

use crate::kafka::MirrorContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryResult, ProducerContext};
use rdkafka::{ClientContext, Message};
use rdkafka_sys as rdsys;
use std::collections::VecDeque;
use std::ffi::CStr;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Which record a delivery report is about, packed into the pointer-sized opaque librdkafka
/// carries with each record (so nothing is allocated per record): the task's slot in the
/// producer's registry, the partition's index in the task, and the record's sequence number in
/// that partition (wrapping: fewer than 2^32 records are ever in flight on one partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RecordTag {
    pub(super) slot: usize,
    pub(super) idx: usize,
    pub(super) seq: u32,
}

const SEQ_BITS: u32 = 32;
const IDX_BITS: u32 = 20;
/// Tasks one data producer serves at once.
pub(super) const MAX_TASKS: usize = 1 << (usize::BITS - SEQ_BITS - IDX_BITS);
/// Partitions one task copies.
pub(super) const MAX_PARTITIONS: usize = 1 << IDX_BITS;
const _: () = assert!(usize::BITS == 64, "RecordTag packs 64 bits into a usize");

impl RecordTag {
    pub(super) fn pack(self) -> usize {
        debug_assert!(self.slot < MAX_TASKS && self.idx < MAX_PARTITIONS);
        (self.slot << (SEQ_BITS + IDX_BITS)) | (self.idx << SEQ_BITS) | self.seq as usize
    }

    pub(super) fn unpack(packed: usize) -> Self {
        RecordTag {
            slot: packed >> (SEQ_BITS + IDX_BITS),
            idx: (packed >> SEQ_BITS) & (MAX_PARTITIONS - 1),
            seq: packed as u32,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AckState {
    Pending,
    Acked(i64),
    Failed,
}

/// A record sent to the target and not yet retired.
#[derive(Debug, Clone, Copy)]
pub(super) struct InFlight {
    pub(super) upstream: i64,
    pub(super) state: AckState,
    pub(super) size: u64,
    pub(super) timestamp: Option<i64>,
}

/// In-order acknowledgement tracking for one partition.
#[derive(Debug, Default)]
pub(super) struct PartitionAcks {
    /// Sent, not yet retired records, in send order.
    pub(super) in_flight: VecDeque<InFlight>,
    /// Sequence number of `in_flight[0]`, and of the next record sent.
    front_seq: u32,
    next_seq: u32,
    /// Last upstream offset whose record and all earlier ones were acknowledged.
    pub(super) committable: Option<i64>,
    pub(super) failure: Option<(i64, String)>,
    /// The target offset of the last record retired as acknowledged, when the broker gave one.
    last_target_offset: Option<i64>,
    /// Records and bytes retired as acknowledged: what the slice actually replicated.
    pub(super) acked_records: u64,
    pub(super) acked_bytes: u64,
    pub(super) newest_timestamp: Option<i64>,
    pub(super) oldest_timestamp: Option<i64>,
}

/// Shared between the copy loop and the producer's delivery callback.
#[derive(Debug, Default)]
pub(super) struct AckTracker {
    pub(super) partitions: Vec<PartitionAcks>,
    /// (partition index, upstream, downstream) acknowledged in order, for offset syncs.
    pub(super) acknowledged: Vec<(usize, i64, i64)>,
    pub(super) outstanding: usize,
    /// Bytes acknowledged in all partitions (the commit cadence's byte bound reads it).
    pub(super) acked_bytes: u64,
    /// Records of this task purged from the producer's queue before the end of the copy (a
    /// shared producer is purged when any of its tasks loses its lease): each leaves a hole
    /// that no later acknowledgement can commit past.
    pub(super) purged: u64,
    /// Whether the producer writes each partition in send order (idempotent, or one request
    /// in flight): then every acknowledgement must land after the one before it.
    pub(super) ordered: bool,
}

impl AckTracker {
    /// Tracks a record about to be handed to the producer; returns its sequence number.
    pub(super) fn sent(
        &mut self,
        idx: usize,
        upstream: i64,
        size: u64,
        timestamp: Option<i64>,
    ) -> u32 {
        let p = &mut self.partitions[idx];
        p.in_flight.push_back(InFlight {
            upstream,
            state: AckState::Pending,
            size,
            timestamp,
        });
        let seq = p.next_seq;
        p.next_seq = seq.wrapping_add(1);
        self.outstanding += 1;
        seq
    }

    /// A record was purged unsent: it stays pending (never committed past), but no longer
    /// counts as outstanding.
    pub(super) fn purged(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.purged += 1;
    }

    /// The delivery report of record `seq` of partition `idx`: `Ok` with its offset on the
    /// target, or the reason it failed.
    pub(super) fn completed(&mut self, idx: usize, seq: u32, result: Result<i64, String>) {
        self.outstanding = self.outstanding.saturating_sub(1);
        let p = &mut self.partitions[idx];
        let at = seq.wrapping_sub(p.front_seq) as usize;
        let Some(entry) = p.in_flight.get_mut(at) else {
            return; // not in flight (cannot happen: each record is reported once)
        };
        entry.state = match &result {
            Ok(down) => AckState::Acked(*down),
            Err(_) => AckState::Failed,
        };
        let upstream = entry.upstream;
        if let Err(reason) = result {
            if p.failure.is_none() {
                p.failure = Some((upstream, reason));
            }
        }
        while let Some(InFlight {
            upstream: up,
            state: AckState::Acked(down),
            size,
            timestamp,
        }) = p.in_flight.front().copied()
        {
            if let Some(reason) = out_of_order(self.ordered, p.last_target_offset, down) {
                p.in_flight[0].state = AckState::Failed;
                p.failure.get_or_insert((up, reason));
                break;
            }
            p.last_target_offset = (down >= 0).then_some(down).or(p.last_target_offset);
            p.in_flight.pop_front();
            p.front_seq = p.front_seq.wrapping_add(1);
            p.committable = Some(up);
            p.acked_records += 1;
            p.acked_bytes += size;
            self.acked_bytes += size;
            if let Some(t) = timestamp {
                p.newest_timestamp = Some(p.newest_timestamp.map_or(t, |n| n.max(t)));
                p.oldest_timestamp = Some(p.oldest_timestamp.map_or(t, |o| o.min(t)));
            }
            self.acknowledged.push((idx, up, down));
        }
    }
}

/// Why an acknowledgement at target offset `down` cannot be right after one at `last`, from a
/// producer that keeps each partition in send order. A record acknowledged at or before its
/// predecessor's offset was taken by the broker for a copy of an earlier batch (an idempotent
/// producer's sequence numbers gone wrong: Kafka answers a duplicate with the first copy's
/// offsets, and librdkafka counts it delivered): it is not on the target, so the record fails
/// and nothing is committed past it, instead of a silent gap. `-1` (no offset given) is not
/// checked.
fn out_of_order(ordered: bool, last: Option<i64>, down: i64) -> Option<String> {
    let last = last.filter(|l| ordered && down >= 0 && down <= *l)?;
    Some(format!(
        "the target acknowledged the record at offset {down}, not after the previous record's \
         {last}: it took the record for a duplicate, so the record may not be on the target"
    ))
}

/// The data producer's context: the trackers of the tasks it serves, by slot, and the delivery
/// callback that hands each report to its task's tracker.
#[derive(Default)]
pub(super) struct CopyContext {
    trackers: RwLock<Vec<Option<Arc<Mutex<AckTracker>>>>>,
    /// The producer's librdkafka handle, once it exists: to ask for its fatal error.
    client: OnceLock<usize>,
}

impl CopyContext {
    /// Registers a task's tracker; returns its slot, or `None` when [`MAX_TASKS`] are
    /// registered already.
    pub(super) fn register(&self, tracker: Arc<Mutex<AckTracker>>) -> Option<usize> {
        let mut trackers = self.trackers.write().expect("tracker registry poisoned");
        let slot = match trackers.iter().position(Option::is_none) {
            Some(free) => free,
            None if trackers.len() < MAX_TASKS => {
                trackers.push(None);
                trackers.len() - 1
            }
            None => return None,
        };
        trackers[slot] = Some(tracker);
        Some(slot)
    }

    /// The task in `slot` is done: reports still to come for its records are dropped.
    pub(super) fn unregister(&self, slot: usize) {
        let mut trackers = self.trackers.write().expect("tracker registry poisoned");
        if let Some(entry) = trackers.get_mut(slot) {
            *entry = None;
        }
    }

    /// Set once the producer exists; its handle outlives every callback of this context,
    /// which the producer owns.
    pub(super) fn set_client(&self, rk: *mut rdsys::rd_kafka_t) {
        let _ = self.client.set(rk as usize);
    }

    /// The producer's fatal error, once librdkafka raised one: the producer is unusable (e.g.
    /// the target refused its idempotent producer ID: CLUSTER_AUTHORIZATION_FAILED on
    /// InitProducerId without IDEMPOTENT_WRITE before Kafka 2.8) and librdkafka purges its
    /// queue. It is set before that purge, so every report the purge makes sees it. (rdkafka's
    /// `Client::fatal_error` asks the same, but a context cannot reach its client; and the
    /// error event librdkafka sends for it carries the broker's code, not `_FATAL`.)
    fn fatal_error(&self) -> Option<String> {
        let rk = *self.client.get()? as *mut rdsys::rd_kafka_t;
        let mut reason = [0 as std::ffi::c_char; 512];
        // SAFETY: `rk` is the live producer (see `set_client`); librdkafka writes a
        // NUL-terminated string of at most `reason.len()` bytes.
        let code = unsafe { rdsys::rd_kafka_fatal_error(rk, reason.as_mut_ptr(), reason.len()) };
        if code == rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return None;
        }
        // SAFETY: NUL-terminated by librdkafka, above.
        let reason = unsafe { CStr::from_ptr(reason.as_ptr()) }.to_string_lossy();
        Some(format!("{}: {reason}", RDKafkaErrorCode::from(code)))
    }

    fn with_tracker(&self, slot: usize, f: impl FnOnce(&mut AckTracker)) {
        let trackers = self.trackers.read().expect("tracker registry poisoned");
        if let Some(Some(tracker)) = trackers.get(slot) {
            f(&mut tracker.lock().expect("ack tracker poisoned"));
        }
    }
}

impl ClientContext for CopyContext {
    // MSK IAM: librdkafka's own token requests, answered when the client polls (every client
    // also gets tokens on a timer, see msk_iam).
    crate::kafka::msk_iam::answer_token_requests!();
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        MirrorContext.log(level, fac, message)
    }
    fn error(&self, error: KafkaError, reason: &str) {
        MirrorContext.error(error, reason)
    }
}

impl ProducerContext for CopyContext {
    /// A packed [`RecordTag`].
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: usize) {
        let tag = RecordTag::unpack(opaque);
        let outcome = match result {
            Ok(msg) => Ok(msg.offset()),
            Err((
                KafkaError::MessageProduction(
                    RDKafkaErrorCode::PurgeQueue | RDKafkaErrorCode::PurgeInflight,
                ),
                _,
            )) => match self.fatal_error() {
                Some(fatal) => Err(format!("the data producer failed for good: {fatal}")),
                None => {
                    // Purged at the slice's end (or as a lease was lost): not delivered, and
                    // not a failure either. The record stays unacknowledged, so the committed
                    // offset stops before it and the next slice copies it.
                    self.with_tracker(tag.slot, AckTracker::purged);
                    return;
                }
            },
            Err((e, _)) => Err(e.to_string()),
        };
        self.with_tracker(tag.slot, |t| t.completed(tag.idx, tag.seq, outcome));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(n: usize) -> AckTracker {
        AckTracker {
            partitions: (0..n).map(|_| PartitionAcks::default()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn committable_advances_only_over_contiguous_acks() {
        let mut t = tracker(1);
        for up in 10..15 {
            t.sent(0, up, 1, None);
        }
        // Sequence numbers count from 0: record `up` is `seq(up)`.
        let seq = |up: i64| (up - 10) as u32;
        t.completed(0, seq(11), Ok(101));
        assert_eq!(t.partitions[0].committable, None, "10 still outstanding");
        t.completed(0, seq(10), Ok(100));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.acknowledged, vec![(0, 10, 100), (0, 11, 101)]);
        t.completed(0, seq(13), Ok(103));
        assert_eq!(t.partitions[0].committable, Some(11));
        t.completed(0, seq(12), Err("broker down".into()));
        assert_eq!(
            t.partitions[0].committable,
            Some(11),
            "never commit past a failed record"
        );
        assert_eq!(t.partitions[0].failure, Some((12, "broker down".into())));
        t.completed(0, seq(14), Ok(104));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.outstanding, 0);
    }

    #[test]
    fn an_acknowledgement_at_or_before_its_predecessors_offset_fails_the_record() {
        let mut t = AckTracker {
            ordered: true,
            ..tracker(1)
        };
        for up in 10..14 {
            t.sent(0, up, 1, None);
        }
        t.completed(0, 0, Ok(100));
        t.completed(0, 1, Ok(-1)); // no offset given: nothing to check
        t.completed(0, 2, Ok(100)); // where record 10 is: taken for a copy of it
        t.completed(0, 3, Ok(101));
        let p = &t.partitions[0];
        assert_eq!(p.committable, Some(11), "never committed past record 12");
        let (upstream, reason) = p.failure.clone().expect("record 12 failed");
        assert_eq!(upstream, 12);
        assert!(
            reason.contains("offset 100, not after the previous record's 100"),
            "{reason}"
        );
    }

    #[test]
    fn a_producer_that_may_reorder_is_not_held_to_send_order() {
        // Without idempotence, several requests in flight may land out of order on retries.
        let mut t = tracker(1);
        t.sent(0, 10, 1, None);
        t.sent(0, 11, 1, None);
        t.completed(0, 1, Ok(100));
        t.completed(0, 0, Ok(101));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.partitions[0].failure, None);
    }

    #[test]
    fn partitions_are_tracked_independently() {
        let mut t = tracker(2);
        t.sent(0, 0, 1, None);
        t.sent(1, 0, 1, None);
        t.completed(1, 0, Ok(7));
        assert_eq!(t.partitions[1].committable, Some(0));
        assert_eq!(t.partitions[0].committable, None);
    }

    #[test]
    fn a_record_tag_survives_the_opaque_at_every_bound() {
        for tag in [
            RecordTag {
                slot: 0,
                idx: 0,
                seq: 0,
            },
            RecordTag {
                slot: MAX_TASKS - 1,
                idx: MAX_PARTITIONS - 1,
                seq: u32::MAX,
            },
            RecordTag {
                slot: 3,
                idx: 70_000,
                seq: 123_456_789,
            },
        ] {
            assert_eq!(RecordTag::unpack(tag.pack()), tag);
        }
    }

    #[test]
    fn sequence_numbers_find_records_across_the_wrap() {
        let mut t = tracker(1);
        t.partitions[0].front_seq = u32::MAX - 1;
        t.partitions[0].next_seq = u32::MAX - 1;
        let seqs: Vec<u32> = (100..104).map(|up| t.sent(0, up, 1, None)).collect();
        assert_eq!(seqs, vec![u32::MAX - 1, u32::MAX, 0, 1]);
        t.completed(0, 0, Ok(2));
        t.completed(0, u32::MAX, Ok(1));
        assert_eq!(t.partitions[0].committable, None, "100 still outstanding");
        t.completed(0, u32::MAX - 1, Ok(0));
        assert_eq!(t.partitions[0].committable, Some(102));
        t.completed(0, 1, Ok(3));
        assert_eq!(t.partitions[0].committable, Some(103));
        assert_eq!(t.partitions[0].front_seq, 2);
    }

    #[test]
    fn reports_reach_the_task_in_their_slot_and_none_after_it_left() {
        let ctx = CopyContext::default();
        let (a, b) = (
            Arc::new(Mutex::new(tracker(1))),
            Arc::new(Mutex::new(tracker(1))),
        );
        let slot_a = ctx.register(a.clone()).unwrap();
        let slot_b = ctx.register(b.clone()).unwrap();
        assert_ne!(slot_a, slot_b);
        let seq = b.lock().unwrap().sent(0, 42, 1, None);
        a.lock().unwrap().sent(0, 7, 1, None);
        ctx.with_tracker(slot_b, |t| t.completed(0, seq, Ok(5)));
        assert_eq!(b.lock().unwrap().partitions[0].committable, Some(42));
        assert_eq!(a.lock().unwrap().partitions[0].committable, None);
        ctx.unregister(slot_a);
        ctx.with_tracker(slot_a, |t| t.completed(0, 0, Ok(1)));
        assert_eq!(a.lock().unwrap().outstanding, 1, "a late report is dropped");
        let again = ctx.register(Arc::new(Mutex::new(tracker(1)))).unwrap();
        assert_eq!(again, slot_a, "a freed slot is reused");
    }
}
