//! A producer's delivery reports, served on a thread of its own, so the threads that produce
//! never poll (rdkafka's `poll` reads the clock twice per call, and several threads polling one
//! producer contend for its queue).
//!
//! Ours, not rdkafka's `ThreadedProducer`: that one, when dropped, waits out the poll in
//! progress (up to 100 ms), which made every slice's end ~50 ms later. This one is told to stop
//! and left to end by itself; it holds the producer, so the producer is destroyed on it.
//!
//! The polls stay long: rdkafka's `poll` rounds what is left of its wait down to whole
//! milliseconds, so the last millisecond of every poll spins, reading the clock twice a turn
//! (with 5 ms polls that was a fifth of the thread's time).

use super::{ClientError, Managed};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, ProducerContext};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long one poll of the delivery reports waits (rdkafka's poll serves every report that
/// arrives meanwhile, and returns only when the wait is over): how long the thread may
/// outlive its owner.
const REPORT_POLL: Duration = Duration::from_millis(100);

/// A producer that can be shared with its report thread.
pub type SharedProducer<C> = Managed<Arc<BaseProducer<C>>>;

/// Creates the producer `role` ([`super::create`]) with a report thread serving it.
pub fn create_producer<C: ProducerContext + 'static>(
    role: &str,
    config: &ClientConfig,
    context: C,
) -> Result<(ReportThread, SharedProducer<C>), ClientError> {
    let producer: Managed<BaseProducer<C>> = super::create(role, config, context)?;
    let producer = producer.map(Arc::new);
    let reports =
        ReportThread::start(role, Arc::clone(&producer)).map_err(|source| ClientError::Thread {
            role: role.to_string(),
            source,
        })?;
    Ok((reports, producer))
}

/// The thread polling one producer; told to stop when dropped.
pub struct ReportThread {
    stop: Arc<AtomicBool>,
}

impl ReportThread {
    /// Starts polling `producer` on a thread named after the client's `role`.
    pub fn start<C: ProducerContext + 'static>(
        role: &str,
        producer: Arc<BaseProducer<C>>,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name(format!("{role}|delivery-reports"))
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    producer.poll(REPORT_POLL);
                }
            })?;
        Ok(ReportThread { stop })
    }
}

impl Drop for ReportThread {
    /// Not joined: the thread ends within [`REPORT_POLL`] and destroys the producer then (its
    /// owner has waited for every delivery it needed). A process that exits first does not
    /// need the producer destroyed (`main` ends with `_exit`, which does not race it).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
