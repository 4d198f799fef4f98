//! MirrorSourceConnector and MirrorSourceTask (mm2-compat §6, §7).

pub mod connector;
pub mod offset_sync_sender;
pub mod offset_sync_writer;
pub mod task;
