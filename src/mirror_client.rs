//! The topology queries of `MirrorClient` / `RemoteClusterUtils`, over a list of topic names.
//!
//! Java tooling answers "which clusters replicate into this one, and how far away are they?" by
//! looking only at topic names on one cluster: heartbeat topics (`heartbeats`,
//! `us-west.heartbeats`, `eu.us-west.heartbeats`) spell out the replication path, and checkpoint
//! topics name the clusters whose consumer groups can be translated (mm2-compat §10). Because the
//! answers depend only on names and the replication policy, they are pure functions here; the
//! caller lists the topics (one admin call) and passes them in. That keeps the logic testable and
//! guarantees our answers equal Java's for the same cluster.
//!
//! Java returns sets; we return sorted, de-duplicated vectors so output is deterministic.
//!
//! Every walk along `topicSource` stops on a repeated alias, because with
//! `IdentityReplicationPolicy` a plain topic's source is always the configured alias and its
//! upstream name is itself, so the chain never ends on its own.

use std::collections::BTreeSet;

use crate::policy::ReplicationPolicy;

/// Topics for which `isHeartbeatsTopic` holds: `heartbeats` and its remote copies at any depth.
pub fn heartbeat_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    sorted_unique(topics.into_iter().filter(|t| policy.is_heartbeats_topic(t)))
}

/// Topics for which `isCheckpointsTopic` holds, such as `us-west.checkpoints.internal`.
pub fn checkpoint_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    sorted_unique(
        topics
            .into_iter()
            .filter(|t| policy.is_checkpoints_topic(t)),
    )
}

/// Every alias on the `topicSource` chain of every heartbeat topic: all clusters that replicate
/// into this one, directly or through other clusters.
pub fn upstream_clusters<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let mut clusters = BTreeSet::new();
    for topic in topics.into_iter().filter(|t| policy.is_heartbeats_topic(t)) {
        clusters.extend(all_sources(policy, topic));
    }
    clusters
}

/// `MirrorClient.allSources`: the aliases along one topic's upstream chain, stopping at the first
/// repeat.
fn all_sources(policy: &ReplicationPolicy, topic: &str) -> BTreeSet<String> {
    let mut sources = BTreeSet::new();
    let mut current = topic.to_string();
    while let Some(source) = policy.topic_source(&current) {
        if !sources.insert(source) {
            break;
        }
        match policy.upstream_topic(&current) {
            Some(up) => current = up,
            None => break,
        }
    }
    sources
}

/// The fewest hops from `alias` to this cluster over all heartbeat topics, or −1 if `alias` does
/// not replicate into this cluster.
pub fn replication_hops<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
    alias: &str,
) -> i32 {
    topics
        .into_iter()
        .filter(|t| policy.is_heartbeats_topic(t))
        .map(|t| count_hops(policy, t, alias))
        .filter(|&hops| hops != -1)
        .min()
        .unwrap_or(-1)
}

/// `MirrorClient.countHopsForTopic`: how many hops up `topic`'s chain `alias` appears (1 for the
/// immediate source), or −1 if the chain ends or repeats first.
pub fn count_hops(policy: &ReplicationPolicy, topic: &str, alias: &str) -> i32 {
    let mut hops = 0;
    let mut visited = BTreeSet::new();
    let mut current = topic.to_string();
    loop {
        hops += 1;
        let Some(source) = policy.topic_source(&current) else {
            return -1;
        };
        if source == alias {
            return hops;
        }
        // A repeated alias means a cycle (identity policy): `alias` will never appear.
        if !visited.insert(source) {
            return -1;
        }
        match policy.upstream_topic(&current) {
            Some(up) => current = up,
            None => return -1,
        }
    }
}

/// Topics replicated from another cluster: not internal, and with a source.
pub fn remote_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    sorted_unique(topics.into_iter().filter(|t| is_remote_topic(policy, t)))
}

/// Remote topics whose immediate source is `source`.
pub fn remote_topics_from<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
    source: &str,
) -> Vec<String> {
    sorted_unique(topics.into_iter().filter(|t| {
        is_remote_topic(policy, t) && policy.topic_source(t).as_deref() == Some(source)
    }))
}

fn is_remote_topic(policy: &ReplicationPolicy, topic: &str) -> bool {
    !policy.is_internal_topic(topic) && policy.topic_source(topic).is_some()
}

fn sorted_unique<'a>(topics: impl Iterator<Item = &'a str>) -> Vec<String> {
    topics
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Props;
    use crate::policy::{
        IDENTITY_REPLICATION_POLICY_CLASS, REPLICATION_POLICY_CLASS, REPLICATION_POLICY_SEPARATOR,
        SOURCE_CLUSTER_ALIAS,
    };

    fn default_policy() -> ReplicationPolicy {
        ReplicationPolicy::default_policy()
    }

    fn identity(alias: &str) -> ReplicationPolicy {
        let props: Props = [
            (REPLICATION_POLICY_CLASS, IDENTITY_REPLICATION_POLICY_CLASS),
            (SOURCE_CLUSTER_ALIAS, alias),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        ReplicationPolicy::from_props(&props).unwrap()
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn sorted(items: &[&str]) -> Vec<String> {
        set(items).into_iter().collect()
    }

    // §10 heartbeatTopics, §12.3 #27
    #[test]
    fn heartbeat_topic_recognition() {
        let p = default_policy();
        for t in ["heartbeats", "s1.heartbeats", "s2.s1.heartbeats"] {
            assert_eq!(heartbeat_topics(&p, [t]), vec![t.to_string()], "{t}");
        }
        for t in [
            "heartbeats!",
            "!heartbeats",
            "source1heartbeats",
            "source1-heartbeats",
        ] {
            assert!(heartbeat_topics(&p, [t]).is_empty(), "{t}");
        }
        let topics = [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source2.source1.heartbeats",
            "source3.heartbeats",
            "heartbeats", // listed twice: a set in Java
        ];
        assert_eq!(
            heartbeat_topics(&p, topics),
            sorted(&[
                "heartbeats",
                "source1.heartbeats",
                "source2.source1.heartbeats",
                "source3.heartbeats"
            ])
        );
    }

    // §10 checkpointTopics, §12.3 #27
    #[test]
    fn checkpoint_topic_recognition() {
        let p = default_policy();
        let topics = [
            "topic1",
            "topic2",
            "checkpoints.internal",
            "source1.checkpoints.internal",
            "source2.source1.checkpoints.internal",
            "source3.checkpoints.internal",
            "checkpoints-internal",
            "checkpoints.internal!",
            "!checkpoints.internal",
            "source1checkpointsinternal",
        ];
        assert_eq!(
            checkpoint_topics(&p, topics),
            sorted(&[
                "source1.checkpoints.internal",
                "source2.source1.checkpoints.internal",
                "source3.checkpoints.internal"
            ])
        );
    }

    // §10 countHops examples
    #[test]
    fn count_hops_examples() {
        let p = default_policy();
        let cases = [
            ("topic", "source", -1),
            ("source", "source", -1),
            ("sourcetopic", "source", -1),
            ("source1.topic", "source2", -1),
            ("source1.topic", "source1", 1),
            ("source2.source1.topic", "source2", 1),
            ("source2.source1.topic", "source1", 2),
            ("source3.source2.source1.topic", "source1", 3),
            ("source3.source2.source1.topic", "source4", -1),
        ];
        for (topic, alias, hops) in cases {
            assert_eq!(count_hops(&p, topic, alias), hops, "{topic} -> {alias}");
        }
    }

    // §10 replicationHops example
    #[test]
    fn replication_hops_example() {
        let p = default_policy();
        let topics = [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.heartbeats",
        ];
        assert_eq!(replication_hops(&p, topics, "source1"), 1);
        assert_eq!(replication_hops(&p, topics, "source2"), 2);
        assert_eq!(replication_hops(&p, topics, "source3"), 1);
        assert_eq!(replication_hops(&p, topics, "source4"), -1);
        // The minimum wins when an alias is reachable along several paths.
        assert_eq!(
            replication_hops(&p, ["a.b.c.heartbeats", "c.heartbeats"], "c"),
            1
        );
        assert_eq!(replication_hops(&p, Vec::<&str>::new(), "c"), -1);
    }

    // §10 upstreamClusters
    #[test]
    fn upstream_clusters_example() {
        let topics = [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.source4.source5.heartbeats",
        ];
        let expected = set(&["source1", "source2", "source3", "source4", "source5"]);
        assert_eq!(upstream_clusters(&default_policy(), topics), expected);
        // §12.3 #28: identity policies treat heartbeats as a special case, so the same holds.
        assert_eq!(upstream_clusters(&identity("primary"), topics), expected);
        assert_eq!(upstream_clusters(&identity("source"), topics), expected);
    }

    // §10 remoteTopics
    #[test]
    fn remote_topics_default_policy() {
        let p = default_policy();
        let topics = [
            "topic1",
            "topic2",
            "topic3",
            "source1.topic4",
            "source1.source2.topic5",
            "source3.source4.source5.topic6",
            "source1.checkpoints.internal", // internal
            "__consumer_offsets",
        ];
        assert_eq!(
            remote_topics(&p, topics),
            sorted(&[
                "source1.topic4",
                "source1.source2.topic5",
                "source3.source4.source5.topic6"
            ])
        );
        assert_eq!(
            remote_topics_from(&p, topics, "source1"),
            sorted(&["source1.topic4", "source1.source2.topic5"])
        );
        assert!(remote_topics_from(&p, topics, "source2").is_empty());
    }

    // §12.3 #27: separator `__`.
    #[test]
    fn remote_topics_with_custom_separator() {
        let props: Props = [(REPLICATION_POLICY_SEPARATOR.to_string(), "__".to_string())]
            .into_iter()
            .collect();
        let p = ReplicationPolicy::from_props(&props).unwrap();
        let topics = [
            "topic1",
            "topic2",
            "topic3",
            "source1__topic4",
            "source1__source2__topic5",
            "source3__source4__source5__topic6",
        ];
        assert_eq!(
            remote_topics(&p, topics),
            sorted(&[
                "source1__topic4",
                "source1__source2__topic5",
                "source3__source4__source5__topic6"
            ])
        );
    }

    // §10 identity example: every plain topic is remote; `heartbeats` is not.
    #[test]
    fn remote_topics_identity_policy() {
        let p = identity("source");
        let topics = [
            "topic1",
            "topic2",
            "topic3",
            "heartbeats",
            "backup.heartbeats",
        ];
        assert_eq!(
            remote_topics(&p, topics),
            sorted(&["topic1", "topic2", "topic3", "backup.heartbeats"])
        );
        assert_eq!(
            remote_topics_from(&p, topics, "source"),
            sorted(&["topic1", "topic2", "topic3"])
        );
        assert_eq!(
            remote_topics_from(&p, topics, "backup"),
            sorted(&["backup.heartbeats"])
        );
    }

    // Identity: a plain topic's chain repeats its alias forever; the walks must stop.
    #[test]
    fn identity_walks_terminate() {
        let p = identity("source");
        assert_eq!(count_hops(&p, "topic1", "source"), 1);
        assert_eq!(count_hops(&p, "topic1", "elsewhere"), -1);
        assert_eq!(all_sources(&p, "topic1"), set(&["source"]));
    }
}
