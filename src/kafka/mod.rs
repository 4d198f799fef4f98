//! Kafka clients built from resolved MM2 settings.
//!
//! MM2 builds every client from a per-role Java config (mm2-compat §2.6). We keep that model:
//! callers pass the Java-named [`Props`] for one role, [`client_config::translate`] maps it to
//! librdkafka names, and errors always name the role (`A->B|MirrorSourceConnector|…`), so a bad
//! `A.consumer.*` key is traced back to where it came from.

pub mod admin_ext;
pub mod client_config;
pub mod cluster;
pub mod internal_log;

use crate::config::Props;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::ClientContext;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("client {role}: unsupported setting {source}")]
    Unsupported {
        role: String,
        #[source]
        source: client_config::UnsupportedSetting,
    },
    #[error("client {role}: {source}")]
    Build {
        role: String,
        #[source]
        source: KafkaError,
    },
    #[error("cluster {cluster} ({bootstrap}): {what}: {message}")]
    Request {
        cluster: String,
        bootstrap: String,
        what: String,
        message: String,
    },
}

/// librdkafka config for one client role, from that role's Java-named settings.
pub fn client_config(role: &str, java: &Props) -> Result<ClientConfig, ClientError> {
    let translated = client_config::translate(java).map_err(|source| ClientError::Unsupported {
        role: role.to_string(),
        source,
    })?;
    if !translated.ignored.is_empty() {
        tracing::debug!(role, ignored = ?translated.ignored, "Java-only client settings ignored");
    }
    let mut config = ClientConfig::new();
    for (k, v) in &translated.settings {
        config.set(k, v);
    }
    Ok(config)
}

/// Map a client-creation failure to an error naming the role (librdkafka names the key).
pub fn build_error(role: &str, source: KafkaError) -> ClientError {
    ClientError::Build {
        role: role.to_string(),
        source,
    }
}

/// Client context for every consumer and admin client we create: librdkafka's own logs go to
/// `tracing` (target `librdkafka`) at matching levels, and routine events are not errors.
///
/// With `enable.partition.eof`, reaching the end of a partition is how we know we are caught
/// up; librdkafka also reports it as a "global error" on the main queue, which rdkafka's default
/// context would log at ERROR level on every read.
#[derive(Debug, Clone, Copy, Default)]
pub struct MirrorContext;

impl ClientContext for MirrorContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", facility = fac, "{message}")
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", facility = fac, "{message}")
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility = fac, "{message}")
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", facility = fac, "{message}")
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_partition_eof(&error) {
            tracing::trace!(target: "librdkafka", %error, reason, "end of partition");
        } else {
            tracing::warn!(target: "librdkafka", %error, reason, "client error");
        }
    }
}

impl ConsumerContext for MirrorContext {}

/// End of partition, however librdkafka chose to report it.
pub fn is_partition_eof(error: &KafkaError) -> bool {
    matches!(
        error,
        KafkaError::PartitionEOF(_) | KafkaError::Global(RDKafkaErrorCode::PartitionEOF)
    )
}
