//! One source partition's queue of fetched records, read in batches.
//!
//! rdkafka's `PartitionQueue::poll` returns one record per call, each wrapped in a
//! reference-counted event (an allocation per record) and timed with a clock read per call
//! (twice: rdkafka's deadline and librdkafka's queue pop): about a tenth of the copy loop's CPU
//! at 512 B records. `rd_kafka_consume_batch_queue` hands over up to a burst of records in one
//! call, each a plain `rd_kafka_message_t` we destroy after copying it. The queue is split from
//! the consumer exactly as rdkafka's `split_partition_queue` does.

use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;
use rdkafka_sys as rdsys;
use rdkafka_sys::types::RDKafkaRespErr;
use std::ffi::{c_void, CString};
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// The nonempty callback, boxed twice: librdkafka keeps a thin pointer to it.
type WakeCallback = Box<Box<dyn Fn() + Send + Sync>>;

pub(super) struct PartitionQueue<C: rdkafka::consumer::ConsumerContext + 'static> {
    queue: NonNull<rdsys::rd_kafka_queue_t>,
    /// Kept until the callback is disabled (on drop).
    wake: Option<WakeCallback>,
    /// The queue belongs to this consumer: it must outlive the queue.
    _consumer: Arc<BaseConsumer<C>>,
}

// SAFETY: librdkafka queues are thread-safe; the callback is Send + Sync.
unsafe impl<C: rdkafka::consumer::ConsumerContext> Send for PartitionQueue<C> {}

impl<C: rdkafka::consumer::ConsumerContext> PartitionQueue<C> {
    /// Splits `topic`-`partition`'s queue off the consumer's: its records and events then
    /// arrive here only. `None` when librdkafka has no such partition handle.
    pub(super) fn split(
        consumer: &Arc<BaseConsumer<C>>,
        topic: &str,
        partition: i32,
    ) -> Option<Self> {
        use rdkafka::consumer::Consumer;
        let topic = CString::new(topic).ok()?;
        // SAFETY: a live consumer and a NUL-terminated name; the queue is ours to destroy.
        let raw = unsafe {
            rdsys::rd_kafka_queue_get_partition(
                consumer.client().native_ptr(),
                topic.as_ptr(),
                partition,
            )
        };
        let queue = NonNull::new(raw)?;
        // SAFETY: a live queue; forwarding to NULL detaches it from the consumer's queue.
        unsafe { rdsys::rd_kafka_queue_forward(queue.as_ptr(), ptr::null_mut()) };
        Some(PartitionQueue {
            queue,
            wake: None,
            _consumer: consumer.clone(),
        })
    }

    /// Calls `wake` whenever the queue becomes non-empty.
    pub(super) fn set_nonempty_callback(&mut self, wake: impl Fn() + Send + Sync + 'static) {
        unsafe extern "C" fn nonempty(_: *mut rdsys::rd_kafka_t, opaque: *mut c_void) {
            // SAFETY: `opaque` is the callback box, alive until disabled (see Drop).
            let wake = unsafe { &*(opaque as *const Box<dyn Fn() + Send + Sync>) };
            wake();
        }
        let boxed: WakeCallback = Box::new(Box::new(wake));
        let opaque = &*boxed as *const Box<dyn Fn() + Send + Sync> as *mut c_void;
        // SAFETY: the box outlives the registration (kept in `self`, disabled on drop).
        unsafe {
            rdsys::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), Some(nonempty), opaque)
        };
        self.wake = Some(boxed);
    }

    /// Moves up to `max` records and events waiting in the queue to `into`, without waiting.
    pub(super) fn take(&self, into: &mut Vec<FetchedMessage>, max: usize) {
        into.clear();
        into.reserve(max);
        let spare = into.spare_capacity_mut();
        // SAFETY: room for `max` pointers; librdkafka writes `n` of them, each a message we
        // own from then on.
        let n = unsafe {
            rdsys::rd_kafka_consume_batch_queue(
                self.queue.as_ptr(),
                0,
                spare.as_mut_ptr().cast(),
                max,
            )
        };
        // SAFETY: the first `n` slots were written with valid message pointers (FetchedMessage
        // is a transparent NonNull); a negative `n` is an error and writes nothing.
        unsafe { into.set_len(n.max(0) as usize) };
    }
}

impl<C: rdkafka::consumer::ConsumerContext> Drop for PartitionQueue<C> {
    fn drop(&mut self) {
        // SAFETY: disable the callback before its box goes, then destroy our queue reference.
        unsafe {
            rdsys::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), None, ptr::null_mut());
            rdsys::rd_kafka_queue_destroy(self.queue.as_ptr());
        }
    }
}

/// A record (or a per-partition event: end of partition, an error) taken from a
/// [`PartitionQueue`]; destroyed when dropped.
#[repr(transparent)]
pub(super) struct FetchedMessage(NonNull<rdsys::rd_kafka_message_t>);

// SAFETY: a message is owned by whoever holds it; librdkafka does not touch it meanwhile.
unsafe impl Send for FetchedMessage {}

impl FetchedMessage {
    fn raw(&self) -> &rdsys::rd_kafka_message_t {
        // SAFETY: valid until dropped.
        unsafe { self.0.as_ref() }
    }

    pub(super) fn ptr(&self) -> *mut rdsys::rd_kafka_message_t {
        self.0.as_ptr()
    }

    /// The event this is, when it is not a record: end of partition, or a consumer error for
    /// the partition (as rdkafka reports them).
    pub(super) fn error(&self) -> Option<KafkaError> {
        let m = self.raw();
        match m.err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR => None,
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__PARTITION_EOF => {
                Some(KafkaError::PartitionEOF(m.partition))
            }
            e => Some(KafkaError::MessageConsumption(e.into())),
        }
    }

    pub(super) fn offset(&self) -> i64 {
        self.raw().offset
    }

    /// Bytes of key and value (null counts 0).
    pub(super) fn size(&self) -> usize {
        let m = self.raw();
        (if m.key.is_null() { 0 } else { m.key_len })
            + (if m.payload.is_null() { 0 } else { m.len })
    }

    /// The record's timestamp (create or log-append time), when it has a valid one.
    pub(super) fn timestamp(&self) -> Option<i64> {
        let mut kind = rdsys::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: a valid message.
        let t = unsafe { rdsys::rd_kafka_message_timestamp(self.ptr(), &mut kind) };
        let available = kind != rdsys::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        (available && t >= 0).then_some(t)
    }
}

impl Drop for FetchedMessage {
    fn drop(&mut self) {
        // SAFETY: ours since rd_kafka_consume_batch_queue handed it over; destroyed once.
        unsafe { rdsys::rd_kafka_message_destroy(self.0.as_ptr()) }
    }
}
