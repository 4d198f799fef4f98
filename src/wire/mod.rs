//! Byte formats shared with Java MM2 (mm2-compat §4).
//!
//! Everything in here is pure encoding and decoding, with no I/O, so it can be tested against
//! the golden bytes of the spec. Two families of formats meet here:
//!
//! * MM2's own records, in Kafka's protocol `Struct` encoding ([`schema`]):
//!   [`offset_sync`], [`checkpoint`] and [`heartbeat`]. Java tools (`RemoteClusterUtils`, the
//!   console formatters) and a Java MM2 read these byte for byte.
//! * Kafka Connect's internal topics, in `JsonConverter` JSON with schemas disabled, written
//!   the way Jackson writes it ([`json`]): source offsets ([`connect_offsets`], placed with
//!   Kafka's [`murmur2`] partitioner), connector/task status ([`connect_status`]) and
//!   connector/task configs ([`connect_config`]). Matching these lets a Java MM2 take over
//!   where we stopped, and the other way round.
//!
//! Rules that hold for every writer here: single-partition MM2 topics are written on
//! partition 0 (§3), and MM2 records are never tombstones (§4.6) — Java readers crash on them.

pub mod checkpoint;
pub mod connect_config;
pub mod connect_offsets;
pub mod connect_status;
pub mod heartbeat;
pub mod json;
pub mod murmur2;
pub mod offset_sync;
pub mod schema;

pub use checkpoint::Checkpoint;
pub use heartbeat::Heartbeat;
pub use json::ConnectRecordError;
pub use offset_sync::OffsetSync;
pub use schema::SchemaError;
