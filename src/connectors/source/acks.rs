//! Connect's `SubmittedRecords` for one task: every record handed to the producer is tracked
//! until its delivery report, and a partition's committable offset advances only over a
//! contiguous run of acknowledged records (mm2-compat §7.6), so a failed or outstanding record
//! is never committed past. The producer's delivery callback ([`CopyContext`]) feeds it.

use crate::kafka::MirrorContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryResult, ProducerContext};
use rdkafka::{ClientContext, Message};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

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
    /// Last upstream offset whose record and all earlier ones were acknowledged.
    pub(super) committable: Option<i64>,
    pub(super) failure: Option<(i64, String)>,
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
}

impl AckTracker {
    pub(super) fn sent(&mut self, idx: usize, upstream: i64, size: u64, timestamp: Option<i64>) {
        self.partitions[idx].in_flight.push_back(InFlight {
            upstream,
            state: AckState::Pending,
            size,
            timestamp,
        });
        self.outstanding += 1;
    }

    /// A record was purged unsent: it stays pending (never committed past), but no longer
    /// counts as outstanding.
    pub(super) fn purged(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    pub(super) fn completed(&mut self, idx: usize, upstream: i64, result: Result<i64, String>) {
        self.outstanding = self.outstanding.saturating_sub(1);
        let p = &mut self.partitions[idx];
        // Reports usually arrive in send order, so the entry is at or near the front.
        if let Some(entry) = p.in_flight.iter_mut().find(|r| r.upstream == upstream) {
            entry.state = match &result {
                Ok(down) => AckState::Acked(*down),
                Err(_) => AckState::Failed,
            };
        }
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
            p.in_flight.pop_front();
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

pub(super) struct CopyContext {
    pub(super) tracker: Arc<Mutex<AckTracker>>,
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

/// Delivery opaque: which partition (by index) and which upstream offset.
pub(super) type SentRecord = Box<(usize, i64)>;

impl ProducerContext for CopyContext {
    type DeliveryOpaque = SentRecord;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: SentRecord) {
        let (idx, upstream) = *opaque;
        let outcome = match result {
            Ok(msg) => Ok(msg.offset()),
            Err((
                KafkaError::MessageProduction(
                    RDKafkaErrorCode::PurgeQueue | RDKafkaErrorCode::PurgeInflight,
                ),
                _,
            )) => {
                // Purged at the slice's end: not delivered, and not a failure either. The
                // record stays unacknowledged, so the committed offset stops before it and the
                // next slice copies it.
                self.tracker.lock().expect("ack tracker poisoned").purged();
                return;
            }
            Err((e, _)) => Err(e.to_string()),
        };
        self.tracker
            .lock()
            .expect("ack tracker poisoned")
            .completed(idx, upstream, outcome);
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
        t.completed(0, 11, Ok(101));
        assert_eq!(t.partitions[0].committable, None, "10 still outstanding");
        t.completed(0, 10, Ok(100));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.acknowledged, vec![(0, 10, 100), (0, 11, 101)]);
        t.completed(0, 13, Ok(103));
        assert_eq!(t.partitions[0].committable, Some(11));
        t.completed(0, 12, Err("broker down".into()));
        assert_eq!(
            t.partitions[0].committable,
            Some(11),
            "never commit past a failed record"
        );
        assert_eq!(t.partitions[0].failure, Some((12, "broker down".into())));
        t.completed(0, 14, Ok(104));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.outstanding, 0);
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
}
