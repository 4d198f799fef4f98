//! MirrorSourceConnector and MirrorSourceTask (mm2-compat §6, §7).

mod acks;
mod clients;
pub mod connector;
pub mod copier;
mod data_producer;
pub mod offset_sync_sender;
pub mod offset_sync_writer;
mod position;
mod replication_consumer;
pub mod task;
mod task_queue;
