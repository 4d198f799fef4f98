//! A source task's queue of fetched records: the queues of all the task's partitions forwarded
//! into one, read in batches.
//!
//! One queue per task, not per partition, because librdkafka applies its prefetch limit
//! (`queued.max.messages.kbytes`, `queued.min.messages`) to the queue a partition's fetches
//! land in, following forwarding: with a queue per partition each partition may hold a whole
//! fetched batch beyond the limit (a producer's batches are up to 1 MB), so memory grew with the
//! partition count (64 partitions: ~130 MiB). Forwarded into one queue, the task's partitions
//! share one limit, as they would in the consumer's own queue.
//!
//! Records of one partition keep their order in the queue; records of different partitions
//! interleave. The queue is the task's own, not the consumer's (which the slice's tasks share):
//! each task still reads only its own partitions.
//!
//! rdkafka's `poll` returns one record per call, each wrapped in a reference-counted event (an
//! allocation per record) and timed with a clock read per call (twice: rdkafka's deadline and
//! librdkafka's queue pop): about a tenth of the copy loop's CPU at 512 B records.
//! `rd_kafka_consume_batch_queue` hands over up to a burst of records in one call, each a plain
//! `rd_kafka_message_t` we destroy after copying it.

use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;
use rdkafka_sys as rdsys;
use rdkafka_sys::types::RDKafkaRespErr;
use std::ffi::{c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// The nonempty callback, boxed twice: librdkafka keeps a thin pointer to it.
type WakeCallback = Box<Box<dyn Fn() + Send + Sync>>;

pub(super) struct TaskQueue<C: rdkafka::consumer::ConsumerContext + 'static> {
    queue: NonNull<rdsys::rd_kafka_queue_t>,
    /// The partitions forwarded here, each with its partition queue (kept to undo the
    /// forwarding on drop).
    partitions: Vec<NonNull<rdsys::rd_kafka_queue_t>>,
    /// Kept until the callback is disabled (on drop).
    wake: Option<WakeCallback>,
    /// The queues belong to this consumer: it must outlive them.
    _consumer: Arc<BaseConsumer<C>>,
}

// SAFETY: librdkafka queues are thread-safe; the callback is Send + Sync.
unsafe impl<C: rdkafka::consumer::ConsumerContext> Send for TaskQueue<C> {}

impl<C: rdkafka::consumer::ConsumerContext> TaskQueue<C> {
    /// A new queue of `consumer` into which the queue of each of `partitions` is forwarded:
    /// their records and events then arrive here only. Do it before the partitions are
    /// assigned (librdkafka keeps an application's forwarding across assign): a record
    /// fetched in between would land in the consumer's queue instead. Names the first
    /// partition librdkafka has no handle for.
    pub(super) fn forwarding(
        consumer: &Arc<BaseConsumer<C>>,
        partitions: &[(String, i32)],
    ) -> Result<Self, String> {
        use rdkafka::consumer::Consumer;
        let rk = consumer.client().native_ptr();
        // SAFETY: a live consumer; the queue is ours to destroy.
        let queue = NonNull::new(unsafe { rdsys::rd_kafka_queue_new(rk) })
            .ok_or_else(|| "cannot create a queue".to_string())?;
        let mut task_queue = TaskQueue {
            queue,
            partitions: Vec::with_capacity(partitions.len()),
            wake: None,
            _consumer: consumer.clone(),
        };
        for (topic, partition) in partitions {
            let name = CString::new(topic.as_str())
                .map_err(|_| format!("topic name {topic:?} holds a NUL"))?;
            // SAFETY: a live consumer and a NUL-terminated name; the queue is ours to destroy.
            let raw = unsafe { rdsys::rd_kafka_queue_get_partition(rk, name.as_ptr(), *partition) };
            let pq = NonNull::new(raw)
                .ok_or_else(|| format!("cannot open a queue for {topic}-{partition}"))?;
            // SAFETY: two live queues of the same client.
            unsafe { rdsys::rd_kafka_queue_forward(pq.as_ptr(), queue.as_ptr()) };
            task_queue.partitions.push(pq);
        }
        Ok(task_queue)
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

    /// Forwards the queue of partition `idx` (of those given to [`TaskQueue::forwarding`])
    /// here again, after an unassign cleared it. Whatever it holds meanwhile comes along, in
    /// order. Harmless when the forwarding stands.
    pub(super) fn forward_again(&self, idx: usize) {
        // SAFETY: two live queues of the same client.
        unsafe { rdsys::rd_kafka_queue_forward(self.partitions[idx].as_ptr(), self.queue.as_ptr()) }
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

impl<C: rdkafka::consumer::ConsumerContext> Drop for TaskQueue<C> {
    fn drop(&mut self) {
        // SAFETY: disable the callback before its box goes; detach each partition queue (it
        // then holds what is still fetched for it, and nobody reads it), then destroy our
        // references.
        unsafe {
            rdsys::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), None, ptr::null_mut());
            for pq in self.partitions.drain(..) {
                rdsys::rd_kafka_queue_forward(pq.as_ptr(), ptr::null_mut());
                rdsys::rd_kafka_queue_destroy(pq.as_ptr());
            }
            rdsys::rd_kafka_queue_destroy(self.queue.as_ptr());
        }
    }
}

/// A record (or a per-partition event: end of partition, an error) taken from a
/// [`TaskQueue`]; destroyed when dropped.
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

    /// The record's partition, with its topic as librdkafka's topic handle: the same handle
    /// for every record of a topic while the consumer lives (see [`FetchedMessage::topic`]).
    pub(super) fn source(&self) -> (*const rdsys::rd_kafka_topic_t, i32) {
        let m = self.raw();
        (m.rkt, m.partition)
    }

    /// The record's topic name (`None` for an event without a topic).
    pub(super) fn topic(&self) -> Option<&str> {
        let m = self.raw();
        if m.rkt.is_null() {
            return None;
        }
        // SAFETY: a live topic handle, held by the message; its name is NUL-terminated.
        unsafe { CStr::from_ptr(rdsys::rd_kafka_topic_name(m.rkt)) }
            .to_str()
            .ok()
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
