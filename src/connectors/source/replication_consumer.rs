//! The slice's replication consumer: one librdkafka consumer of the source cluster, shared by
//! every source task of the slice (one client, one fetch session and one prefetch budget
//! instead of one per task).
//!
//! A partition belongs to exactly one task: the task forwards the partition's queue into a
//! queue of its own ([`super::task_queue::TaskQueue`]), adds the partition to the assignment
//! (incrementally) and reads it alone, in order; when the task ends it takes its partitions
//! out of the assignment again. So sharing changes neither per-partition order nor fencing:
//! each task checks its own lease before every batch it forwards.

use super::clients::consumer_props;
use crate::config::Props;
use crate::kafka::{client_config, close_consumer, ClientError, Managed, MirrorContext};
use rdkafka::consumer::BaseConsumer;
use std::sync::Arc;
use std::time::Duration;

pub struct ReplicationConsumer {
    consumer: Managed<Arc<BaseConsumer<MirrorContext>>>,
}

impl ReplicationConsumer {
    /// Creates the consumer `role` with these (Java-named) settings, for tasks that read
    /// `tasks` tasks (the prefetch budget is split across their queues).
    pub fn open(role: &str, props: &Props, tasks: usize) -> Result<Self, ClientError> {
        let config = client_config(role, &consumer_props(props, tasks))?;
        let consumer: Managed<BaseConsumer<MirrorContext>> =
            crate::kafka::create(role, &config, MirrorContext)?;
        Ok(ReplicationConsumer {
            consumer: consumer.map(Arc::new),
        })
    }

    pub(super) fn client(&self) -> &Arc<BaseConsumer<MirrorContext>> {
        &self.consumer
    }
}

impl Drop for ReplicationConsumer {
    /// A closed consumer is destroyed at once; an open one first leaves its group and waits
    /// for its broker threads.
    fn drop(&mut self) {
        close_consumer(&self.consumer, Duration::from_millis(500));
    }
}
