//! Kafka Connect's persistence, byte-compatible with Java: the offsets, status and config topics
//! a Connect worker keeps on the target cluster (`mm2-offsets|status|configs.<source>.internal`).
//!
//! Java MM2 reads what we write here and we read what it wrote, so either can take over a flow.

pub mod config_store;
pub mod internal_topics;
pub mod offset_store;
pub mod status_store;
pub mod worker_group;
