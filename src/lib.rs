//! mirrorslice: Kafka MirrorMaker 2 as a bounded-time batch job.
//!
//! The library holds all logic; `src/main.rs` (the CLI) and `functions/*` (Lambda) stay thin.
//! Module names follow MM2's own concepts so an MM2 user can find each one:
//!
//! * [`config`]  — `mm2.properties` parsing and MM2's config resolution, herder pairs.
//! * [`policy`]  — replication policies (remote topic naming, cycle detection).
//! * [`filter`]  — topic, group and config-property filters.
//! * [`wire`]    — byte formats shared with Java MM2 (offset syncs, checkpoints, heartbeats,
//!   Connect offsets, Kafka's murmur2 partitioner).
//! * [`kafka`]   — client construction from resolved settings, and admin queries.
//! * [`plan`]    — what a config will do, before anything runs (`mirrorslice plan`).
//! * [`connect`] — Connect's offsets, status and config topics, byte-compatible with Java.
//! * [`connectors`] — MM2's source, checkpoint and heartbeat connectors, for one slice.
//! * [`lease`], [`state`] — task leases and small durable state (local files or DynamoDB).
//! * [`slice`]   — one bounded slice of one herder pair; [`report`] — what it did.
//! * [`backend`] — chooses local or DynamoDB leases; [`metrics`] — CloudWatch EMF lines.
//! * [`failover`] — `translate-offsets` and `failover`.

pub mod aws;
pub mod backend;
pub mod config;
pub mod connect;
pub mod connectors;
pub mod failover;
pub mod filter;
pub mod kafka;
pub mod lease;
pub mod memory;
pub mod metrics;
pub mod mirror_client;
pub mod plan;
pub mod policy;
pub mod report;
pub mod slice;
pub mod state;
pub mod wire;
