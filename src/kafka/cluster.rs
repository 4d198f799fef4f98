//! Read-only questions asked of a cluster: which topics exist, with how many partitions.
//!
//! Metadata calls in librdkafka block, so they run on tokio's blocking pool and are bounded by a
//! timeout; an unreachable cluster is an error naming the alias and bootstrap servers, which
//! `plan` shows instead of failing the whole command.

use super::{client_config, ClientError};
use crate::config::Props;
use rdkafka::consumer::{BaseConsumer, Consumer};
use std::collections::BTreeMap;
use std::time::Duration;

/// Topic name → partition count, for every topic the cluster lists.
pub type TopicPartitions = BTreeMap<String, i32>;

/// List the topics of one cluster with their partition counts.
pub async fn list_topics(
    cluster: &str,
    role: &str,
    java: &Props,
    timeout: Duration,
) -> Result<TopicPartitions, ClientError> {
    let bootstrap = java.get("bootstrap.servers").cloned().unwrap_or_default();
    let config = client_config(role, java)?;
    let cluster_name = cluster.to_string();
    let role = role.to_string();
    let bootstrap_for_err = bootstrap.clone();
    let result = tokio::task::spawn_blocking(move || -> Result<TopicPartitions, ClientError> {
        let consumer: super::Managed<BaseConsumer<super::MirrorContext>> =
            super::create(&role, &config, super::MirrorContext)?;
        let metadata =
            consumer
                .fetch_metadata(None, timeout)
                .map_err(|e| ClientError::Request {
                    cluster: cluster_name.clone(),
                    bootstrap: bootstrap.clone(),
                    what: "fetch metadata".into(),
                    message: e.to_string(),
                })?;
        Ok(metadata
            .topics()
            .iter()
            .filter(|t| t.error().is_none())
            .map(|t| (t.name().to_string(), t.partitions().len() as i32))
            .collect())
    })
    .await;
    match result {
        Ok(r) => r,
        Err(join) => Err(ClientError::Request {
            cluster: cluster.to_string(),
            bootstrap: bootstrap_for_err,
            what: "fetch metadata".into(),
            message: join.to_string(),
        }),
    }
}
