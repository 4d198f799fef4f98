//! MM2's three connectors, each split into connector-level planning (what to replicate, which
//! task gets what) and task-level work (copy records, translate offsets, emit heartbeats).

pub mod checkpoint;
pub mod heartbeat;
pub mod source;
