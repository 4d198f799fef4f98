//! The slice's data producer: one librdkafka producer to the target cluster, shared by every
//! source task of the slice. Each task registers its [`AckTracker`] and gets a slot; delivery
//! reports find their task by the slot packed into the record's opaque ([`RecordTag`]).
//!
//! Records are handed to librdkafka with `rd_kafka_produceva` on a topic handle taken once per
//! remote topic: rdkafka's `BaseProducer::send` allocates a C string for the topic name on
//! every record, and librdkafka then looks the topic up by that name (a lock and a hash
//! lookup), and a boxed opaque would be one more allocation. A record's headers are detached
//! from the consumed record and handed over as they are, not copied. What remains per record
//! is librdkafka's own copy of the key and value.

use super::acks::{AckTracker, CopyContext, RecordTag, MAX_PARTITIONS};
use super::task_queue::FetchedMessage;
use crate::config::Props;
use crate::kafka::report_thread::{create_producer, ReportThread, SharedProducer};
use crate::kafka::{client_config, ClientError};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{Producer, PurgeConfig};
use rdkafka_sys as rdsys;
use rdkafka_sys::types::RDKafkaRespErr;
use std::collections::HashMap;
use std::ffi::CString;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex};

pub struct DataProducer {
    /// Dropped before the producer (field order): librdkafka wants topic handles gone first.
    topics: Mutex<HashMap<String, Arc<TopicHandle>>>,
    /// Serves delivery reports: the tasks never poll the producer.
    _reports: ReportThread,
    producer: SharedProducer<CopyContext>,
    /// Idempotent or one request in flight: each partition is written in send order.
    keeps_order: bool,
}

impl DataProducer {
    /// Creates the producer `role` with these (Java-named) settings.
    pub fn open(role: &str, props: &Props) -> Result<Self, ClientError> {
        let config = client_config(role, props)?;
        let keeps_order = config.get("enable.idempotence") == Some("true")
            || ["max.in.flight.requests.per.connection", "max.in.flight"]
                .iter()
                .any(|k| config.get(k) == Some("1"));
        let (reports, producer) = create_producer(role, &config, CopyContext::default())?;
        producer
            .context()
            .set_client(producer.client().native_ptr());
        Ok(DataProducer {
            topics: Mutex::new(HashMap::new()),
            _reports: reports,
            producer,
            keeps_order,
        })
    }

    /// Whether each partition is written in send order (see [`AckTracker::ordered`]).
    pub(super) fn keeps_order(&self) -> bool {
        self.keeps_order
    }

    /// Drops records not yet delivered: each is reported as purged to its task.
    pub(super) fn purge(&self, what: PurgeConfig) {
        self.producer.purge(what);
    }

    /// Registers a task's tracker; a task with too many partitions, or one task too many, is
    /// refused with the reason.
    pub(super) fn register(
        self: &Arc<Self>,
        tracker: Arc<Mutex<AckTracker>>,
        partitions: usize,
    ) -> Result<TaskSlot, String> {
        if partitions > MAX_PARTITIONS {
            return Err(format!(
                "{partitions} partitions in one task; at most {MAX_PARTITIONS} are supported \
                 (raise tasks.max)"
            ));
        }
        let slot = (self.producer.context().register(tracker))
            .ok_or_else(|| "too many tasks share one data producer".to_string())?;
        Ok(TaskSlot {
            producer: self.clone(),
            slot,
        })
    }

    /// The handle of topic `name`, taken on first use.
    pub(super) fn topic(&self, name: &str) -> Result<Arc<TopicHandle>, KafkaError> {
        let mut topics = self.topics.lock().expect("topic handles poisoned");
        if let Some(handle) = topics.get(name) {
            return Ok(handle.clone());
        }
        let c_name = CString::new(name)
            .map_err(|_| KafkaError::MessageProduction(RDKafkaErrorCode::InvalidTopic))?;
        // SAFETY: a live producer and a NUL-terminated name; a NULL config takes the
        // producer's default topic config. The handle is destroyed before the producer.
        let raw = unsafe {
            rdsys::rd_kafka_topic_new(
                self.producer.client().native_ptr(),
                c_name.as_ptr(),
                ptr::null_mut(),
            )
        };
        let handle = Arc::new(TopicHandle(NonNull::new(raw).ok_or(
            KafkaError::MessageProduction(RDKafkaErrorCode::InvalidTopic),
        )?));
        topics.insert(name.to_string(), handle.clone());
        Ok(handle)
    }
}

/// A task's registration with the data producer; unregistered when dropped.
pub(super) struct TaskSlot {
    producer: Arc<DataProducer>,
    slot: usize,
}

impl TaskSlot {
    pub(super) fn producer(&self) -> &DataProducer {
        &self.producer
    }

    /// Hands a copy of the consumed record `msg` to the producer: same key, value, `headers`
    /// (taken over when sent) and `timestamp` (`None`: the producer's clock), to `partition` of
    /// `topic`, tagged with partition `idx` of this task and sequence number `seq`. librdkafka
    /// copies the bytes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send(
        &self,
        topic: &TopicHandle,
        partition: i32,
        msg: &FetchedMessage,
        headers: &mut RecordHeaders,
        timestamp: Option<i64>,
        idx: usize,
        seq: u32,
    ) -> Result<(), RDKafkaErrorCode> {
        let tag = RecordTag {
            slot: self.slot,
            idx,
            seq,
        };
        // SAFETY: `msg` outlives the call; its key and payload pointers are valid for their
        // lengths (or NULL), and librdkafka copies them (F_COPY). On success librdkafka owns the
        // headers; on failure they stay ours (`RecordHeaders` destroys them when dropped).
        let raw = unsafe {
            let m = &*msg.ptr();
            let vus = [
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_RKT,
                    rdsys::rd_kafka_vu_s__bindgen_ty_1 {
                        rkt: topic.0.as_ptr(),
                    },
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_PARTITION,
                    rdsys::rd_kafka_vu_s__bindgen_ty_1 { i32_: partition },
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_MSGFLAGS,
                    rdsys::rd_kafka_vu_s__bindgen_ty_1 {
                        i: rdsys::RD_KAFKA_MSG_F_COPY,
                    },
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_VALUE,
                    mem(m.payload, m.len),
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_KEY,
                    mem(m.key, m.key_len),
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_OPAQUE,
                    rdsys::rd_kafka_vu_s__bindgen_ty_1 {
                        ptr: tag.pack() as *mut _,
                    },
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_TIMESTAMP,
                    rdsys::rd_kafka_vu_s__bindgen_ty_1 {
                        i64_: timestamp.unwrap_or(0),
                    },
                ),
                vu(
                    rdsys::rd_kafka_vtype_t::RD_KAFKA_VTYPE_HEADERS,
                    rdsys::rd_kafka_vu_s__bindgen_ty_1 { headers: headers.0 },
                ),
            ];
            rdsys::rd_kafka_produceva(
                self.producer.producer.client().native_ptr(),
                vus.as_ptr(),
                vus.len(),
            )
        };
        if raw.is_null() {
            headers.0 = ptr::null_mut(); // librdkafka's now
            return Ok(());
        }
        // SAFETY: a non-NULL error from produceva is ours to read and destroy.
        let code: RDKafkaRespErr = unsafe {
            let code = rdsys::rd_kafka_error_code(raw);
            rdsys::rd_kafka_error_destroy(raw);
            code
        };
        Err(code.into())
    }
}

impl Drop for TaskSlot {
    fn drop(&mut self) {
        self.producer.producer.context().unregister(self.slot);
    }
}

fn vu(
    vtype: rdsys::rd_kafka_vtype_t,
    u: rdsys::rd_kafka_vu_s__bindgen_ty_1,
) -> rdsys::rd_kafka_vu_t {
    rdsys::rd_kafka_vu_t { vtype, u }
}

fn mem(ptr: *mut std::ffi::c_void, size: usize) -> rdsys::rd_kafka_vu_s__bindgen_ty_1 {
    rdsys::rd_kafka_vu_s__bindgen_ty_1 {
        mem: rdsys::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 { ptr, size },
    }
}

/// A librdkafka topic handle of the data producer.
pub(super) struct TopicHandle(NonNull<rdsys::rd_kafka_topic_t>);

// SAFETY: librdkafka topic handles are thread-safe (refcounted, internally locked).
unsafe impl Send for TopicHandle {}
unsafe impl Sync for TopicHandle {}

impl Drop for TopicHandle {
    fn drop(&mut self) {
        // SAFETY: taken from rd_kafka_topic_new, destroyed once.
        unsafe { rdsys::rd_kafka_topic_destroy(self.0.as_ptr()) }
    }
}

/// A consumed record's headers, detached from it (parsed once, never copied) to travel with
/// its copy: in order, duplicates kept, names and values byte for byte. NULL when it has none.
pub(super) struct RecordHeaders(*mut rdsys::rd_kafka_headers_t);

impl RecordHeaders {
    pub(super) fn detach(msg: &FetchedMessage) -> Self {
        let mut hdrs: *mut rdsys::rd_kafka_headers_t = ptr::null_mut();
        // SAFETY: `msg` is ours; detaching leaves it without headers, which it no longer needs.
        let err = unsafe { rdsys::rd_kafka_message_detach_headers(msg.ptr(), &mut hdrs) };
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR => RecordHeaders(hdrs),
            _ => RecordHeaders(ptr::null_mut()),
        }
    }
}

impl Drop for RecordHeaders {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: ours, never handed over to librdkafka.
            unsafe { rdsys::rd_kafka_headers_destroy(self.0) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::clients::producer_props;
    use super::*;

    fn keeps_order(user: &[(&str, &str)], tasks: usize) -> bool {
        let mut props: Props = user
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        props.insert("bootstrap.servers".into(), "127.0.0.1:9".into());
        let producer = DataProducer::open("test", &producer_props(&props, tasks)).unwrap();
        producer.keeps_order()
    }

    #[test]
    fn a_producer_keeps_send_order_when_idempotent_or_with_one_request_in_flight() {
        assert!(keeps_order(&[], 1), "Connect's: one request in flight");
        assert!(keeps_order(&[], 8), "idempotent");
        let five = ("max.in.flight.requests.per.connection", "5");
        assert!(!keeps_order(&[("enable.idempotence", "false"), five], 1));
        assert!(keeps_order(&[("enable.idempotence", "true"), five], 1));
    }
}
